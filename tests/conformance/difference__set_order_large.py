# expect-difference: a set that grows past 65,536 elements keeps insertion order (the order model is bounded)
# lackpy-repr: [70000, 69999, 69998]
s = set(range(70000, 0, -1))
list(s)[:3]
