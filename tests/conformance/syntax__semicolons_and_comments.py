a = 1; b = 2  # two statements
c = a + b  ;
# a comment line

[a, b, c]  # trailing comment
