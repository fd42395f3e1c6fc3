words = ['ab', 'cde']
[[w + str(i) for i in range(len(w))] for w in words]
