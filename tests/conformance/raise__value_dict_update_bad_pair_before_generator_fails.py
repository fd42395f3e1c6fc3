# dict.update() checks each element of a generator before pulling the next.
counts = {}
counts.update((1, 2, 3) if i == 0 else 1 / 0 for i in range(2))
