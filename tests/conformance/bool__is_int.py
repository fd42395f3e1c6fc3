[isinstance(True, int), isinstance(True, bool), isinstance(1, bool), True == 1, False == 0, True + 0, [True, 1, 1.0].count(1)]
