range()
