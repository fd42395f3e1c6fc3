opts = {'sep': '-', 'end': '!\n'}
print('a', 'b', **opts)
print(*[1, 2], **{'sep': ''})
