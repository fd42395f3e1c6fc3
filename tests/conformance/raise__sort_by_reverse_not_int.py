rows = sort_by([{"n": 1}, {"n": 2}], "n", reverse="yes")
