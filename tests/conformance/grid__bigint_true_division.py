nums = [int('1' * k) for k in range(15, 45, 4)]
dens = [int('3' * j) for j in range(14, 30, 5)]
[a / b for a in nums for b in dens]
