['even' if x % 2 == 0 else 'odd' for x in range(4)]
