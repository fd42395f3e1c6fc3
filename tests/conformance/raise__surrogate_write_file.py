x = write_file('out.txt', 'hello \ud800')
