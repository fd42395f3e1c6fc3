[r'\d+', R'\n', u'unicode', f'{1}' f'{2}', 'a' f'{3}' 'b', rf'{1}\n', fr'\t{2}']
