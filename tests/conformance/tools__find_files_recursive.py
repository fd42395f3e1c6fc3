[find_files('**/*.txt'), find_files('sub/**/*.txt'), find_files('**/*.py')]
