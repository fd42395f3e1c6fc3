reversed({1, 2})
