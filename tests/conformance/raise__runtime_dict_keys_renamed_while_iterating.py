# Renaming keys inside the loop: the first two renames are yielded past,
# the third key found is one too many ('keys changed'), not at the first.
d = {'a': 1, 'b': 2}
for k in d:
    print(k)
    d[k.upper()] = d.pop(k)
