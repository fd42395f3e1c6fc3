text = "a\nb"
text.splitlines(True, keepends=True)
