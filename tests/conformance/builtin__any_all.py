[any([]), all([]), any([0, '', None]), any([0, 1]), all([1, 'a']), all([1, 0]), any('ab'), all(''), any(x > 3 for x in range(5)), all(x < 3 for x in range(5))]
