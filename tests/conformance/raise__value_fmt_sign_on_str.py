f'{"abc":+}'
