opts = {"sep": ","}
print("a", "b", sep=";", **opts)
