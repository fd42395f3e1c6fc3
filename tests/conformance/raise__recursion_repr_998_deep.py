# A repr 998 levels deep passes the recursion limit: RecursionError, as
# python3 running the program as a script.
tree = []
for depth in range(998):
    tree = [tree]
text = repr(tree)
