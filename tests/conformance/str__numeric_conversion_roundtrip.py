[str(int('00042')), str(float('1e-3')), int(str(-17)), float(str(0.1)) == 0.1, str(1.0e6), str(1.0e16), str(123456789012.0)]
