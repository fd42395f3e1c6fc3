sorted()
