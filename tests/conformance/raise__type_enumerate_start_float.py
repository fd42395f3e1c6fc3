enumerate('ab', start=1.5)
