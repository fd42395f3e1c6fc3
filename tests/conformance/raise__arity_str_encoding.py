s = str([1], "utf-8")
