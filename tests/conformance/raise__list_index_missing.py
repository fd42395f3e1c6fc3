['a', 'b'].index('c')
