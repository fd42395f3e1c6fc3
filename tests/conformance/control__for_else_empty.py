out = []
for x in []:
    out.append(x)
else:
    out.append('else ran')
out
