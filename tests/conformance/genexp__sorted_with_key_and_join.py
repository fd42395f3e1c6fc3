words = ['pear', 'fig', 'apple']
', '.join(sorted((w.upper() for w in words), key=len))
