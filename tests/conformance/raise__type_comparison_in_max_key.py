max(['a', 'bb'], key=lambda s: None if len(s) == 1 else 1)
