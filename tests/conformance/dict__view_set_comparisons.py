a = {"x": 1, "y": 2}
b = {"y": 2, "x": 1}
k = a.keys()
print(a.items() == b.items(), a.keys() == b.keys(), k == {"x", "y"}, a.items() != {("x", 1)})
print(k <= {"x", "y", "z"}, k < {"x", "y"}, k > {"x"}, k >= b.keys(), {"x"} < k, a.items() <= b.items())
print(a.items() == {("x", 1), ("y", 2)}, a.items() < {("x", 1), ("y", 2), ("z", 3)}, a.keys() == ["x", "y"])
a["z"] = 3
k == {"x", "y"}, k > b.keys(), list(k)
