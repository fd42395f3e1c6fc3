['\x00'.isascii(), 'abc\x7f'.isascii(), 'ǆemal'.capitalize(), 'ﬁne'.capitalize(), ' a'.capitalize(), 'A B'.capitalize()]
