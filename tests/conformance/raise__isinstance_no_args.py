isinstance()
