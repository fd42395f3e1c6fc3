# sort() compares in CPython's order (timsort: runs, binary insertion, galloping
# merges), so a mixed-type failure names the operands in CPython's order.
x = [28, 44, 13, 27, 33, 18, 39, 10, 25, 43, 44, 23, 16, 40, 49, 32, 31, 34, 5, 43, 36, 47, 6, 50, 45, 8, 11, 11, 11, 38, 27, 45, 49, 20, 43, 14, 50, 16, 16, 1, 46, 4, 36, 19, 34, 25, 22, 1, None, 9, 18, 46, 36, 15, 41, 0, 46, 14, 26, 21, 8, 26, 37, 25, 6]
x.sort()
x
