f'{"abc":,}'
