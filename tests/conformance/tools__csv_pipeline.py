rows = [line.split(',') for line in read_file('data.csv').strip().splitlines()]
header, body = rows[0], rows[1:]
people = [dict(zip(header, r)) for r in body]
for p in sort_by(people, 'name', reverse=True):
    print(p['name'], int(p['age']) + 1)
len(people)
