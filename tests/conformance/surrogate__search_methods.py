t = 'ab\ud800cd\ud800ef'
['\ud800' in t, t.find('\ud800'), t.rfind('\ud800'), t.index('\ud800c'), t.count('\ud800'), t.startswith('ab\ud800'), t.endswith('\ud800ef'), t.find('\udc00'), 'x' in t]
