total = 0
for i in range(3):
	if i:
		total += i
	else:
		total -= 1
total
