data = {'a': 1}
vals = [
    data[k]
    for k in ['a', 'b']
]
