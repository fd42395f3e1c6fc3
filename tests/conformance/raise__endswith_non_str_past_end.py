name = "abc"
name.endswith(5, 10)
