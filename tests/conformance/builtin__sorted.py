[sorted([3, 1, 2]), sorted('hello'), sorted((2, 1)), sorted({'b': 1, 'a': 2}), sorted([3, 1, 2], reverse=True), sorted([]), sorted({3, 1, 2}), sorted([1.5, 1, True, 0])]
