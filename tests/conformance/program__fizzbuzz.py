out = []
for i in range(1, 16):
    if i % 15 == 0:
        out.append('FizzBuzz')
    elif i % 3 == 0:
        out.append('Fizz')
    elif i % 5 == 0:
        out.append('Buzz')
    else:
        out.append(str(i))
' '.join(out)
