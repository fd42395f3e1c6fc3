cases = ['\ud800', 'a\ud800', '\ud800A', '1\udc00', ' \udfff ', '\ud800\udc00', 'Ab\ud800Cd']
out = []
for c in cases:
    out.append([c.isalnum(), c.isalpha(), c.isdecimal(), c.isdigit(), c.isnumeric(), c.isspace(), c.islower(), c.isupper(), c.istitle(), c.isidentifier(), c.isascii()])
out
