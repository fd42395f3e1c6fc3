['abc'.replace('', ''), 'aaa'.replace('a', ''), 'abab'.replace('ab', 'ba'), 'é'.replace('é', 'e'), 'a.b.c'.replace('.', '', 1), 'mississippi'.replace('ss', 'SS', 1)]
