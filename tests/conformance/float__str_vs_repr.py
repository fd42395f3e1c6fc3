x = 1e16
[str(x), repr(x), str(0.1), str(1.0), str(-1e-7), str(123.456)]
