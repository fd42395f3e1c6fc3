log = []
d = {log.append('k1') or 'a': log.append('v1') or 1, log.append('k2') or 'b': log.append('v2') or 2}
[d, log]
