s = 'ab'
t = s
s += 'c'
tp = (1,)
tq = tp
tp += (2,)
s2 = 'x'
s2 *= 3
[s, t, tp, tq, s2]
