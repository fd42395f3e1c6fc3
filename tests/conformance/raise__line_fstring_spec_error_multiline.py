# A format error is reported at the first line of the f-string, not at the line of
# the formatted value.
count = 5
label = f"""total:
{count:q}"""
