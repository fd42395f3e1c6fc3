range(stop=5)
