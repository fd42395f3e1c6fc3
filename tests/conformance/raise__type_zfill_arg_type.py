'1'.zfill('3')
