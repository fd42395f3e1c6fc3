rows = [{'a': 1}, {'b': 2}]
sort_by(rows, 'a')
