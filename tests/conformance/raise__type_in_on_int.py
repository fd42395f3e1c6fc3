1 in 5
