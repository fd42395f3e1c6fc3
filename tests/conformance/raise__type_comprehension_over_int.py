[x for x in 5]
