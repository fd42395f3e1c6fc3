['abc'.isascii(), ''.isascii(), 'é'.isascii(), '\x7f'.isascii(), '\x80'.isascii()]
