[[x * 2 for x in range(5)], [x for x in range(10) if x % 3 == 0], [c.upper() for c in 'abc'], [x for x in []], [(x, y) for x in range(2) for y in 'ab']]
