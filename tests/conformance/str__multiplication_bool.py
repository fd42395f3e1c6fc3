['ab' * True, 'ab' * False]
