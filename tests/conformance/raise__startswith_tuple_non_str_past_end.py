# Each prefix in the tuple is type-checked even when start lies past the end.
name = "abc"
name.startswith(("", None), 10)
