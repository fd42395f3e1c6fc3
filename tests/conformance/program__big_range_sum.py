[sum(range(1000000)), len(range(0, 10000000, 3)), max(range(100000))]
