[True + True, True * 10, False - 1, True / 2, -True, True // 1]
