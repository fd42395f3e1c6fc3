['a\nb\r\nc\rd'.splitlines(), 'a\nb\n'.splitlines(), 'a\nb\n'.splitlines(True), ''.splitlines(), '\n'.splitlines(), 'x\x0by\x1cz\u2028w'.splitlines(), 'a\r\nb'.splitlines(keepends=True)]
