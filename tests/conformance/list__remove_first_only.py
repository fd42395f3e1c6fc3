xs = ['a', 'b', 'a', 'c', 'a']
xs.remove('a')
[xs, xs.count('a'), xs.index('a')]
