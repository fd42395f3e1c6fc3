[find_files('*.txt'), find_files('sub/*'), find_files('*.nothing'), find_files('missing_dir/*'), find_files('?.md'), find_files('[ab].*')]
