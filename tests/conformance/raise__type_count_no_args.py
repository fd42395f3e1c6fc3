'abc'.count()
