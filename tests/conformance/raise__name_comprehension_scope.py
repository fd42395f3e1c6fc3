xs = [i for i in range(3)]
i
