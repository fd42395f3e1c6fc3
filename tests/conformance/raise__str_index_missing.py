'hello'.index('z')
