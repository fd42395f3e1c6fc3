[repr(1), repr('a'), repr("it's"), repr([1, 'b']), repr(None), repr(1.0), repr(range(3)), repr({'a': (1,)}), repr(''), repr(set())]
