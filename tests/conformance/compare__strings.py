['a' < 'b', 'abc' < 'abd', 'Z' < 'a', '' < 'a', 'ab' < 'a', 'é' > 'z', 'apple' == 'apple', 'a' != 'A']
