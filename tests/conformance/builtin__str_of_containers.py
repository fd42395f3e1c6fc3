[str(['a', "b'c"]), str(('x',)), str({'k': 'v'}), str({1}), str([1.0, -0.0, float('nan')])]
