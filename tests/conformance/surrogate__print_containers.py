s = '\ud800'
print([s, 'a'])
print((s,), {s: 1}, repr(s))
print(f'{s!r} and {s!a}')
len(s)
