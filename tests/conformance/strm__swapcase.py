['Hello World'.swapcase(), ''.swapcase(), 'ß'.swapcase(), 'aBc123'.swapcase()]
