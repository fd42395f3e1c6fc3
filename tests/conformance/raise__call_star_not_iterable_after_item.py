extra = None
print("a", *extra)
