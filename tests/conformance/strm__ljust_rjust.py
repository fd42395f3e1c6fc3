['ab'.ljust(5), 'ab'.ljust(5, '.'), 'abc'.ljust(2), 'ab'.rjust(5), 'ab'.rjust(5, '0'), 'abc'.rjust(0), ''.rjust(2, 'x')]
