opts = ["sep", ","]
words = sorted(["b", "a"], **opts)
