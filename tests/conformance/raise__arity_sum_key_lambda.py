items = [{"v": 1}, {"v": 2}]
total = sum(items, key=lambda d: d["v"])
