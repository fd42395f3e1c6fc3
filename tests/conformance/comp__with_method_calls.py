lines = ['  Alpha ', 'beta', '', ' Gamma']
[l.strip().lower() for l in lines if l.strip()]
