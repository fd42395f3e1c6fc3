abs('x')
