print('a', 'b', sep='\udfff')
