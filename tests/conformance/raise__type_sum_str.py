sum(['a', 'b'])
