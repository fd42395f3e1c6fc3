['a,b,c'.rsplit(',', 1), '  a  b  c  '.rsplit(None, 1), 'a b c'.rsplit(), 'a,b,c'.rsplit(','), ''.rsplit(), 'a,,b'.rsplit(',', 5), 'x y z'.rsplit(maxsplit=0)]
