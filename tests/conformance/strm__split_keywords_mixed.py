line = "a b  c d"
print(line.split(maxsplit=1), line.rsplit(maxsplit=1))
print(line.split(sep=" ", maxsplit=2), line.rsplit(" ", maxsplit=2))
print("x\ny\n".splitlines(keepends=True), "\tq".expandtabs(tabsize=2))
