words = ['banana', 'pie', 'Apple', 'fig', 'kiwi']
[sorted(words, key=len), sorted(words, key=lambda w: w.lower()), sorted(words, key=lambda w: -len(w)), sorted(words, key=len, reverse=True)]
