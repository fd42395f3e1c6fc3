# The tuple's items (a slice's bounds included) are evaluated before the
# subscript fails.
text = "abc"
part = text[1:, len(text) // 0]
