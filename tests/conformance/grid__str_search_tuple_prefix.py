s = 'hello world'
[[s.startswith(p, a, b), s.endswith(p, a, b)] for p in [('he', 'wo'), ('xx',), (), ('', 'z')] for a, b in [(0, 11), (6, 11), (-5, -1), (3, 2), (20, 30)]]
