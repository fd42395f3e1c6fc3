prices = {'apple': 1.5, 'pear': 0.75, 'kiwi': 2.0}
[{k: v for k, v in prices.items() if v > 1}, {v: k for k, v in prices.items()}, sorted(prices, key=prices.get)]
