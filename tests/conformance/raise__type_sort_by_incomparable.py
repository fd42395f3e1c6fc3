sort_by([{'a': 1}, {'a': 'x'}], 'a')
