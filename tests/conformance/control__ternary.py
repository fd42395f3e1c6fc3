x = 5
[('big' if x > 3 else 'small'), (1 if 0 else 2 if 0 else 3), ('a' if [] else 'b')]
