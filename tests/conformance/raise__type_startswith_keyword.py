'abc'.startswith(prefix='a')
