[', '.join(['a', 'b', 'c']), ''.join([]), '-'.join('abc'), ' '.join(('x',)), '.'.join(str(i) for i in range(4)), ''.join(['é', '😀']), 'ab'.join(['1', '2', '3'])]
