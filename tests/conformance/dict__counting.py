counts = {}
for w in 'the cat and the hat and the bat'.split():
    counts[w] = counts.get(w, 0) + 1
counts
