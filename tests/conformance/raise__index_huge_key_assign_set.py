# The same for a set (it has sequence methods, for `in`); a small key is
# the TypeError.
s = {1, 2}
k = 100000000000000000000 * 3
s[k] = 0
