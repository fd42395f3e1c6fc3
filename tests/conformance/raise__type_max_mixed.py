max([1, 'a'])
