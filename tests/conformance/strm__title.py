['hello world'.title(), "they're bill's".title(), 'HELLO'.title(), 'a1b2 c3d'.title(), ''.title(), 'élan vital'.title()]
