n = len(["a"], key=len)
