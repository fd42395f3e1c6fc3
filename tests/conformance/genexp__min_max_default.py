[max((x for x in [] if x), default=-1), min((len(w) for w in ['ab', 'c']), default=0)]
