vals = [0, 1, '', 'a', [], [0], None]
[(a and b, a or b) for a in vals for b in vals[:3]]
