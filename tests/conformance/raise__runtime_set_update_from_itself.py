# set.update() adds each item as the generator produces it, so a generator
# over the same set sees it grow.
seen = {1, 2}
seen.update(x + 10 for x in seen)
