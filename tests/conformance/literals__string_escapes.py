['\N{GREEK SMALL LETTER ALPHA}', '\101\102', '\u00e9', '\x41', 'a\
b', r'\n\t', '\'"', "\"'", len('\0\00\000'), '\7']
