['a'.center(2), 'a'.center(3), 'ab'.center(3), 'ab'.center(5), 'abc'.center(6), 'abc'.center(4, '*')]
