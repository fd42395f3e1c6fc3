[''.join(reversed('abc')), ','.join(sorted({'b', 'a'})), '\n'.join(['a', 'b']), ' '.join(x.strip() for x in [' a ', 'b ']), '-'.join([]), '-'.join(['only'])]
