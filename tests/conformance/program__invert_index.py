docs = {'d1': 'a b c', 'd2': 'b c d', 'd3': 'c'}
index = {}
for name, text in docs.items():
    for word in text.split():
        index.setdefault(word, []).append(name)
index
