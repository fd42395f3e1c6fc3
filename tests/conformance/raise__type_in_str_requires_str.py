1 in 'abc'
