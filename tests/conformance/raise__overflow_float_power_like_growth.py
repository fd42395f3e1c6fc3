x = 1e300
x = x * 1e10
int(x)
