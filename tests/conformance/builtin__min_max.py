[min(3, 1, 2), max(3, 1, 2), min([4, 5]), max('hello'), min('b', 'a'), max([1, 2.5, 2]), min((1, 'a'), (1, 'b')), max(True, 0), min(0, False), max(False, 0)]
