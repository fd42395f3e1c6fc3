vals = [0, -0.0, 1, 1.0, True, False, 0.5, -1, 9007199254740993, 9007199254740992.0, float('inf'), float('nan')]
[[a < b for b in vals] for a in vals] + [[a == b for b in vals] for a in vals]
