[[s.center(w, '*'), s.ljust(w, '.'), s.rjust(w, '-')] for s in ['', 'a', 'ab', 'abc'] for w in range(0, 7)]
