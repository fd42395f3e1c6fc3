'abc'.removeprefix(1)
