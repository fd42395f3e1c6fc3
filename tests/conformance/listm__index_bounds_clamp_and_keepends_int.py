xs = [1, 2, 1]
(xs.index(1, 1, 99999999999999999999), xs.index(1, -99999999999999999999), (1, 2).index(2, True), "a\nb".splitlines(2), "a\nb".splitlines(keepends=0), sorted([1, 2], reverse=5))
