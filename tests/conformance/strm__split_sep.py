['a,b,,c'.split(','), ''.split(','), 'a,b,c'.split(',', 1), 'a,b,c'.split(',', 0), 'a,b,c'.split(',', -1), 'a::b::c'.split('::'), ',a,'.split(','), 'abc'.split('abc')]
