s = '\ud800'
[s.center(5), s.ljust(3, '*'), s.rjust(3, '\udc00'), s.zfill(4), ('  ' + s + '  ').strip(), (s + 'xx' + s).strip(s), s.lstrip('\ud800'), '\tA\ud800'.expandtabs(4), ('a\ud800b').removeprefix('a'), ('a\ud800').removesuffix('\ud800')]
