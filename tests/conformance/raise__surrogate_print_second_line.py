rows = ['ok', 'fine', 'bad\udbff\udfff!', 'never']
for r in rows:
    print(r)
