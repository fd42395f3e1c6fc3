'abc'.startswith(['a'])
