args = [3, 1, 2]
[max(*args), min(*args, 0), sorted([*args, *args]), list(zip(*[[1, 2], [3, 4]]))]
