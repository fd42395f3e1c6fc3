text = read_file('sub/deep/cfg.txt')
new = '\n'.join(line.replace(' = ', '=') for line in text.splitlines()) + '\n'
write_file('sub/deep/cfg.txt', new)
[read_file('sub/deep/cfg.txt'), edit_file('sub/deep/cfg.txt', 'x=1', 'x=10'), read_file('sub/deep/cfg.txt')]
