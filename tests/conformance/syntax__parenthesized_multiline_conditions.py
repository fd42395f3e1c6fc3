a, b, c = 1, 0, 3
if (a and
        not b and
        c > 2):
    r = 'yes'
else:
    r = 'no'
r
