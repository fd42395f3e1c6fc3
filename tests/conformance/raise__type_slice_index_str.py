'abc'['a':]
