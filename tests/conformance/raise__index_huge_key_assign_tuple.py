# Assigning to a tuple item with an int key beyond a C ssize_t: CPython
# converts the key first (PyObject_SetItem), so the error is the
# conversion's IndexError, not "does not support item assignment".
t = (1, 2)
print(t[-1])
t[-100000000000000000000] = 9
