{}.popitem()
