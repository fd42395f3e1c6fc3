people = [{'name': 'bob', 'age': 27}, {'name': 'ann', 'age': 31}, {'name': 'cid', 'age': 27}]
[[p['name'] for p in sort_by(people, 'age')], [p['name'] for p in sort_by(people, 'name')], [p['name'] for p in sort_by(people, 'age', reverse=True)], [p['name'] for p in sort_by(people, 'age', True)]]
