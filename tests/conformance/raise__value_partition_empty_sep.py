'abc'.partition('')
