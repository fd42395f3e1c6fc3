text = "report.txt"
text.removesuffix(None)
