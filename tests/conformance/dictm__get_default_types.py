d = {0: 'zero', '': 'empty', None: 'none'}
[d.get(0), d.get(False), d.get(''), d.get(None), d.get(0.0), d.get('x', [])]
