['a\x1cb\x1dc\x1ed\x1fe'.split(), 'a\x85b'.split(), 'x\u2000y\u3000z'.split(), '\u2000x\u3000'.strip(), 'a\x0cb'.split()]
