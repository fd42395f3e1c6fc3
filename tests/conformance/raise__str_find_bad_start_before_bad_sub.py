# find() converts start and end before it checks the substring type.
text = "a b a"
text.find(0, 1.5)
