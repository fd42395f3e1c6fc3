primes = []
for n in range(2, 60):
    for p in primes:
        if n % p == 0:
            break
    else:
        primes.append(n)
primes
