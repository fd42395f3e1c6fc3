{k: [x for x in range(k)] for k in range(4)}
