# Nested tuples of types, as CPython's isinstance() recurses into them; a
# tuple is tried in order and the first match ends it.
checks = []
for v in [1, "a", 2.5, True, [1], (1,), {1: 2}, {3}, None]:
    checks.append(isinstance(v, (list, (tuple, (str, float)))))
    checks.append(isinstance(v, ((int,), ())))
    checks.append(isinstance(v, (dict, [str])) if isinstance(v, dict) else None)
print(checks)
isinstance(True, ((), (bool,))), isinstance(1, ()), isinstance(1, (int, [str]))
