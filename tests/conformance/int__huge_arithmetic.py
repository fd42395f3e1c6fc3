a = int('7' * 300)
b = int('3' * 250)
[a // b, a % b, (a * b) % 1000000007, len(str(a * b)), a - a, -a // b]
