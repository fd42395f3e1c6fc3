'hello'.rindex('z')
