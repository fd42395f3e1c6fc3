['a=b=c'.partition('='), 'abc'.partition('='), 'a=b=c'.rpartition('='), 'abc'.rpartition('='), '=x'.partition('='), ''.partition('a')]
