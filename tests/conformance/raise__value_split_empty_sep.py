'a b'.split('')
