s = [{1}][0]
s.index(1)
