n = 0
for w in ['x', 'y']:
    n += 1
    print(w, end='\udc00')
