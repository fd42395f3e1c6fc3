count = 3
f"{count:z}"
