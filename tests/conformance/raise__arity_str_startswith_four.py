words = "a b c"
words.startswith("a", 0, 1, 2)
