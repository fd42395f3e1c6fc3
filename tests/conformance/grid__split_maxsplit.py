s = ' a  b c   d '
[[s.split(None, n), s.rsplit(None, n), s.split(' ', n), s.rsplit(' ', n)] for n in [-1, 0, 1, 2, 3, 10]]
