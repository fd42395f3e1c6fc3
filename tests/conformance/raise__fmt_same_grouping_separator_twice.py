# The same grouping separator twice is read as the type: "Cannot specify ',' with ','."
x = 1234
ok = [f'{x:,}', f'{x:_}']
f'{x:,,}'
