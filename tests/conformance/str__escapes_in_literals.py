['tab\there', 'nl\nx', 'q\'s', "d\"q", 'back\\slash', '\x41\u00e9\N{BULLET}', r'raw\n', len('\0')]
