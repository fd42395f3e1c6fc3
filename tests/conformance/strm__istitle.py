[s.istitle() for s in ['Hello World', 'Hello world', 'HELLO', '', 'A', "They'Re", '1A', 'Ab Cd1 Ef']]
