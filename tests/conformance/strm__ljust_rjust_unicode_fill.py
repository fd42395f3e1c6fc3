['é'.ljust(3, '·'), '😀'.rjust(3, '-'), 'ab'.ljust(3, 'é'), 'abc'.ljust(-5), ''.ljust(0), 'x'.rjust(1, '*')]
