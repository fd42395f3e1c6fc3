# CPython 3.11 keeps a dict whose keys are all str in a str-only table; the
# first non-str key resizes (compacts) it, which moves the position a
# running iterator continues from: here 'b' is skipped (the printed keys
# show it), and the loop later finds one key too many.
d = dict(a=1, b=2, c=3)
seen = []
for k, v in d.items():
    seen.append(k)
    d.pop(k)
    d[len(seen) + 20] = 2
    print(len(d), list(d))
