'abc'.count(1)
