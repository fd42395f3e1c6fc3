'-'.join('b', 'c')
