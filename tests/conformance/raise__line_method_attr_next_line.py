text = "x=1\ny=2"
rows = text.split(
    "\n").index("z=3")
