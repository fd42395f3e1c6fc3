s = '9' * 4300
len(str(int(s)))
