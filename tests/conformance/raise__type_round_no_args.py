round()
