xs = [[1], (1,), 1, '1', 1.0, [1]]
[xs.count([1]), xs.count(1), xs.index((1,)), xs.index('1'), xs.index([1], 1)]
