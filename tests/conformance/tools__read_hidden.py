read_file('.hidden').strip().split('=')
