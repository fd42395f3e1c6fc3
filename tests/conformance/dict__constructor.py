[dict(), dict(a=1, b=2), dict([('x', 1), ('y', 2)]), dict({'k': 'v'}), dict({'k': 1}, k=2), dict(zip('ab', [1, 2])), dict([[1, 2]])]
