csv = "a,b,c"
csv.split(",", 1, maxsplit=1)
