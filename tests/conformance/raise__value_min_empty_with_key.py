min([], key=len)
