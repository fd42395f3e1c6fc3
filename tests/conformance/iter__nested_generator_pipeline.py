nums = (int(s) for s in '1 2 3 4 5 6'.split())
evens = (n for n in nums if n % 2 == 0)
squares = (n * n for n in evens)
[sum(squares), list(squares)]
