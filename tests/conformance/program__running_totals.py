xs = [5, -2, 7, 1]
totals = []
acc = 0
for x in xs:
    acc += x
    totals.append(acc)
[totals, max(totals), totals.index(max(totals))]
