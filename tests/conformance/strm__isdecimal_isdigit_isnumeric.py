xs = ['123', '', '½', '²', '١٢', '1.5', '-1', '٣']
[[x.isdecimal(), x.isdigit(), x.isnumeric()] for x in xs]
