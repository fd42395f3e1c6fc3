vals = [[], (), {}, set(), '', 0, 0.0, None, False]
[[isinstance(v, (list, tuple)) for v in vals], [isinstance(v, (int, float)) for v in vals]]
