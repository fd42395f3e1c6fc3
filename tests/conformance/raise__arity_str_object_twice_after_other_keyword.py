# The argument given both by position and by name is reported before the
# unknown keyword that comes first.
label = str(42, base=10, object=0)
