# Raise=TypeError
x = 5
ok = isinstance(x, {int})
