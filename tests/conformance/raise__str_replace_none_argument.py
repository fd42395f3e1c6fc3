# Argument-clinic messages name None itself: "must be str, not None".
text = "a-b"
text.replace("-", None)
