for i in []:
    pass
i
