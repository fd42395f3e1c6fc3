rows = [r.split(',') for r in read_file('data.csv').splitlines()[1:]]
ages = [int(age) for name, age in rows]
{'count': len(ages), 'mean': sum(ages) / len(ages), 'oldest': max(rows, key=lambda r: int(r[1]))[0]}
