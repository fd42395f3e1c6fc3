sum(sum(1 for c in w if c in 'aeiou') for w in ['banana', 'sky', 'queue'])
