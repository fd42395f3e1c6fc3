# A list of types is not a tuple: CPython's TypeError when the call runs
# (after its arguments are evaluated, left to right).
values = [1, "a"]
found = []
for v in values:
    found.append(isinstance(v, (float, int)))
print(found)
x = isinstance(values[0], [int, float])
