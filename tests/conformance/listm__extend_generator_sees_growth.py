# list.extend() and += append a generator's items one at a time: a generator
# reading the list sees the items already appended.
a = [1, 2]
a.extend(len(a) for x in range(3))
b = [1, 2]
b += (x for x in b if len(b) < 6)
(a, b)
