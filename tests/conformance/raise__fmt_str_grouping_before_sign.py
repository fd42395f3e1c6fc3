label = "total"
f"{label:+,}"
