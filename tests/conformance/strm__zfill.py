['42'.zfill(5), '-42'.zfill(5), '+42'.zfill(5), 'abc'.zfill(2), ''.zfill(3), '3.14'.zfill(7), '-'.zfill(3)]
