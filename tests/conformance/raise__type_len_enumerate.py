len(enumerate([]))
