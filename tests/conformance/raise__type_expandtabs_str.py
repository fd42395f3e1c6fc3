'a\tb'.expandtabs('x')
