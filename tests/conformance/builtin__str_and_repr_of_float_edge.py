[str(1e16), repr(1e15), str(1.0), str(-1.5e-10), repr(float('-inf')), str(5e-324)]
