set().pop()
