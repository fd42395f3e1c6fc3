words = ['aa', 'b', 'cccc', 'dd']
[min(words, key=len), max(words, key=len), max([], default='none'), min([], default=None), max(words, key=len, default=''), min('ab', 'c', key=len), max([2, 3], default=0)]
