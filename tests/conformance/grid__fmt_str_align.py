words = ['', 'a', 'ab', 'abc', 'abcdef']
[f'{w:{a}{n}}|' for w in words for a in ['<', '>', '^', '*^', '-<', '0>'] for n in [0, 1, 4, 5]]
