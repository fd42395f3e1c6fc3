'abc' - 'b'
