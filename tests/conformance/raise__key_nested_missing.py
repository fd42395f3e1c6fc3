cfg = {'db': {'host': 'x'}}
cfg['db']['port']
