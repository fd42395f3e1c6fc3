cfg = {'db': {'host': 'x', 'port': 1}}
cfg['db']['port'] += 1
cfg['db']['user'] = 'me'
cfg
