[s.isspace() for s in [' ', '\t\n', '', ' a ', '\x0b\x0c', '\u3000', '\xa0']]
