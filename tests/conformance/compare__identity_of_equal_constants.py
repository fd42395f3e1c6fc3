# CPython's compiler shares equal constants across one compilation (the
# module and its comprehensions); strings built at run time are new objects.
a = "hello world"
b = "hello world"
c = "hello"
d = "hello"
t = (1, "x y", 2.5)
u = (1, "x y", 2.5)
v = (1, True)
w = (1, 1)
big1 = 100000000000000000000
big2 = 100000000000000000000
nested = ((1, 2), "a b")
nested2 = ((1, 2), "a b")
inner = [y for x in [0] for y in ["hello world", "hello", "q r", "q r"]]
loop = []
for i in range(2):
    loop.append("same site")
joined = "".join(["hel", "lo"])
[
    a is b, c is d, t is u, v is w, v == w, big1 is big2,
    nested is nested2, nested[0] is nested2[0],
    inner[0] is a, inner[1] is c, inner[2] is inner[3],
    loop[0] is loop[1], joined is c, joined == c,
]
