['a\tb'.expandtabs(), 'a\tb'.expandtabs(4), 'ab\tc\td'.expandtabs(3), '\t'.expandtabs(0), 'x\ny\tz'.expandtabs(2), 'abcdefgh\ti'.expandtabs()]
