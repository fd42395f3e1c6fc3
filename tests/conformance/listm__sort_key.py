words = ['banana', 'Apple', 'cherry', 'date', 'fig']
words.sort(key=len)
a = list(words)
words.sort(key=lambda w: w.lower())
b = list(words)
words.sort(key=lambda w: (len(w), w), reverse=True)
[a, b, words]
