out = []
for ch in 'aé😀':
    out.append(ch)
out
