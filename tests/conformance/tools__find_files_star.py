find_files('*')
