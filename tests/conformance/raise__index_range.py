range(3)[5]
