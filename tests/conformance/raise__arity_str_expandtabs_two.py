row = "a\tb"
row.expandtabs(4, 8)
