[not 0, not 1, not '', not 'a', not [], not None, not not 3]
