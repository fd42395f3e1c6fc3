people = [{'n': 'a', 'g': 2}, {'n': 'b', 'g': 1}, {'n': 'c', 'g': 2}, {'n': 'd', 'g': 1}]
[[p['n'] for p in sorted(people, key=lambda p: p['g'])], [p['n'] for p in sorted(people, key=lambda p: p['g'], reverse=True)]]
