s = '\udfff'
items = [s, (s, 1), {s: s}, {'k': [s]}]
[str(items), str((s,)), str({s}), repr(items), str([]) + s == '[]' + s, len(str([s]))]
