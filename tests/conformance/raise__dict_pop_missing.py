{}.pop('k')
