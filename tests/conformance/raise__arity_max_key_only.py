best = max(key=len)
