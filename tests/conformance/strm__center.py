['ab'.center(6), 'ab'.center(7, '*'), 'abc'.center(2), ''.center(3, '-'), 'a'.center(4, 'é'), 'abc'.center(-1)]
