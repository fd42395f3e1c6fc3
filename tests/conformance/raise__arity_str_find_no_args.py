line = "key=value"
line.find()
