[max('apple', 'fig', 'banana', key=len), min(3, -4, 2, key=abs), max([1, -5, 3], key=lambda x: -x), max('a', 'B'), min([[2], [1, 5]])]
