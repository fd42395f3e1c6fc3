calls = []
k = [3, 1, 2]
out = sorted(k, key=lambda v: calls.append(v) or -v, reverse=True)
k.sort(key=lambda v: calls.append(v * 10) or v, reverse=True)
(out, k, calls)
