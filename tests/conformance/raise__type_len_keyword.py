len(obj=[1])
