[isinstance(1, (int,)), isinstance('a', (list, tuple, str)), isinstance([], (dict, set))]
