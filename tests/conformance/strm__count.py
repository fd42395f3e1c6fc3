['banana'.count('a'), 'banana'.count('an'), 'banana'.count(''), 'aaaa'.count('aa'), 'banana'.count('a', 2), 'banana'.count('a', 2, 4), 'banana'.count('a', -3), ''.count(''), 'abc'.count('', 1, 2)]
