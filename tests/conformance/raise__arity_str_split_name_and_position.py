csv = "a,b,c"
csv.split(",", sep=",")
