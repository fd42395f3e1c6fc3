s = {range(0): 'a'}
s[range(5, 5)] = 'b'
t = {range(0, 3), range(0, 4, 3)}
u = {range(0, 3, 2): 1}
[s, len(s), len(t), u[range(0, 4, 2)], range(1, 2) in {range(1, 10, 20)}, range(2, 8, 3) in {range(2, 6, 3)}, len({range(0), range(3, 1), range(9, 9, -1)}), len({range(0, 10), range(0, 10, 1)}), len({range(5, 0, -1), range(5, 0, -1)}), {range(1, 2): 1, range(1, 3, 7): 2}, {(range(4, 4), 1): 'x'}[(range(0), 1)], len(set([range(3), range(0, 3), range(0, 3, 1), range(0, 4, 3)]))]
