text = "a\nb"
text.splitlines(0.5)
