# expect-difference: CPython places -1 (hash -2) after positive ints; lackpy keeps insertion order
# lackpy-repr: {-1, 1, 2}
{-1, 1, 2}
