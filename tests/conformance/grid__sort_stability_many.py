recs = [(i % 4, i) for i in range(30)]
[sorted(recs, key=lambda r: r[0]), sorted(recs, key=lambda r: r[0], reverse=True), sort_by(recs, 0, reverse=True) == sorted(recs, key=lambda r: r[0], reverse=True)]
