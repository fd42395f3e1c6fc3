# CRLF line endings: the error is on line 5.
x = {'a': 1,
     'b': 2}
print(sorted(x))
y = x['c']
