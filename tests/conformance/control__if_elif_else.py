out = []
for n in [-2, 0, 3, 100]:
    if n < 0:
        out.append('neg')
    elif n == 0:
        out.append('zero')
    elif n < 10:
        out.append('small')
    else:
        out.append('big')
out
