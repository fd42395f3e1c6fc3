[0 or 5, 3 or 5, 0 and 5, 3 and 5, '' or 'x', [] or {} or 0, 1 and 2 and 3, None or None, [] and 1]
