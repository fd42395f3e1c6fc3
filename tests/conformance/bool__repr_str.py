[True, False, str(True), repr(False), f'{True}', f'{False!r}', bool('False')]
