text = read_file('b.md') + read_file('a.txt')
words = text.split()
[len(words), sorted(set(words)), max(words, key=len), {w: words.count(w) for w in words}]
