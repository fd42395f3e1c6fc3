# Nested data 600 levels deep: its repr, str and f-string work as in CPython
# (well inside the recursion limit of 1000).
tree = []
for depth in range(600):
    tree = [tree]
flat = repr(tree)
print(len(flat), len(str(tree)), len(f"{tree}"), flat[:5], flat[-5:])
other = []
for depth in range(600):
    other = [other]
[tree == other, len(flat)]
