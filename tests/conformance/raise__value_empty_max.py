max([])
