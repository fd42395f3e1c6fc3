sorted({w[0] for w in ['apple', 'avocado', 'banana', 'cherry', 'blue']})
