items = [('\ud800', 1), ('\ue000', 2), ('\udbff', 3), ('\U00010000', 4)]
lst = list(items)
lst.sort()
keys = [k for k, v in sort_by(items, 0)]
[lst, keys, sorted(['\ud800' + 'b', '\ud800' + 'a', '\ud800']), [['\udc00'], ['\uf000']] < [['\uf000']]]
