find_files('**')
