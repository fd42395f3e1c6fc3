# Indentation with tabs, measured as CPython measures it: a tab after a
# space, and a block at one tab holding one at nine spaces, are consistent
# (tabs to multiples of 8 and tabs as one column order the lines alike).
total = 0
for i in range(4):
 	if i % 2:
 		total += i
 	else:
	         total -= 1
print(total)
rows = [
	1,
  	2,
]
if total:
	if rows:
	         print(rows)
[total, rows]
