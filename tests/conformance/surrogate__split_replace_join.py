t = 'a\ud800b\ud800c'
[t.split('\ud800'), t.rsplit('\ud800', 1), t.partition('\ud800'), t.rpartition('\ud800'), t.replace('\ud800', '-'), t.replace('b', '\udfff'), '\ud800'.join(['x', 'y', 'z']), ''.join(['\ud83d', '\ude00']), ('\ud800 \udc00').split()]
