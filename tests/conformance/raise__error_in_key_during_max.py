max(['a', 'bb', 3], key=len)
