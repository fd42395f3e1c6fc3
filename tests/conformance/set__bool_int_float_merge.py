s = {1, True, 1.0}
t = {0, False, 0.0, -0.0}
[s, t, len(s) + len(t)]
