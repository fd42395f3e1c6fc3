[[c for c in 'héllo'], [k for k in {'z': 1, 'a': 2}], [x for x in sorted({3, 1, 2})]]
