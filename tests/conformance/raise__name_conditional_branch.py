flag = False
if flag:
    msg = 'yes'
print(msg)
