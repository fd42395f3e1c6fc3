[len('abc'), len([1, 2]), len((1,)), len({'a': 1}), len({1, 2, 3}), len(range(10)), len(range(0, 10, 3)), len(range(5, 0)), len({'a': 1}.items()), len('')]
