{None: [True, False], (True,): {False}, 'n': (None,)}
