calls = []
def_val = 3
r = 1 < (calls.append(1) or def_val) < 5
[r, calls]
