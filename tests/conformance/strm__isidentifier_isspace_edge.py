[s.isidentifier() for s in ['_', '__x', 'x1_', 'ñandú', '1', 'a.b', 'None']] + [s.isspace() for s in ['\x1c', '\x85', '\u200b', '\r\n']]
