[str(), str(5), str(-1.5), str(None), str([1, 'a']), str((1,)), str({'a': 1}), str('x'), str(True), str(10000000000000000000000)]
