[max([], default=1, key=len), min(['bb', 'a'], default='z', key=len), max([[1], [2, 3]], key=len)]
