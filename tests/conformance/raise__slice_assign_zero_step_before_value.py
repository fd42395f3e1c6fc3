# The slice is checked (zero step) before the assigned value (not iterable).
xs = [1, 2, 3]
xs[::0] = 5
