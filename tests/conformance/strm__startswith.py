['hello'.startswith('he'), 'hello'.startswith(''), 'hello'.startswith(('x', 'hel')), 'hello'.startswith('ll', 2), 'hello'.startswith('l', -2), 'hello'.startswith('hello', 0, 3), ''.startswith('')]
