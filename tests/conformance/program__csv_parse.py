raw = 'name,age\nann,31\nbob,27\n'
lines = raw.strip().split('\n')
header = lines[0].split(',')
rows = [dict(zip(header, line.split(','))) for line in lines[1:]]
[r['name'] for r in sort_by(rows, 'age')]
