t = 'aB\ud800cD\udfff'
[t.upper(), t.lower(), t.swapcase(), t.title(), t.capitalize(), t.casefold(), '\ud800abc'.capitalize(), '\ud800abc def'.title()]
