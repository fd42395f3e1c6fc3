int(' ')
