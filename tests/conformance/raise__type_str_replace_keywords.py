'abc'.replace(old='a', new='b')
