z = zip([1], strict=True, fill=None)
