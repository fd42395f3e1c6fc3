# str() names None itself in its argument errors.
text = str(1, None)
