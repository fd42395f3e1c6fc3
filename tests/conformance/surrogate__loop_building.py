out = ''
for c in 'abc':
    out += c + '\ud800'
parts = out.split('\ud800')
[out, len(out), parts, '-'.join(parts), out[1::2] == '\ud800' * 3]
