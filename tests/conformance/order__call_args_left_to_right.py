log = []
r = max(log.append(1) or 1, log.append(2) or 5, log.append(3) or 3)
[r, log]
