print("start")
print("x", file=1)
