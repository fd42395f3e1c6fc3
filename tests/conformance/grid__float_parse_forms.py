forms = ['1', '-1.5', ' 2.5e3 ', '1E-3', '.5', '5.', '1_0.2_5', 'inf', '-INF', 'Infinity', 'nan', '-nan', '1e400', '-1e400', '1e-400', '0x10' if False else '16']
[float(f) for f in forms]
