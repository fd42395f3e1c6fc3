# Assigning to a slice of a dict hashes the slice (unhashable), like reading one.
config = {"a": 1, "b": 2}
config[:1] = ["x"]
