field = "\x1c7\x1f"
n = int(field)
