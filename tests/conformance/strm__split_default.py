['  a  b   c  '.split(), ''.split(), '   '.split(), 'a\tb\nc\r\nd'.split(), 'a b c'.split(None, 1), '  a b c  '.split(maxsplit=1), 'a\u3000b'.split()]
