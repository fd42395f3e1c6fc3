out = []
for n in [-5, 0, 5, 50, 500]:
    out.append('neg' if n < 0 else 'zero' if n == 0 else 'small' if n < 10 else 'medium' if n < 100 else 'large')
out
