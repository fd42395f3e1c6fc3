['ǅungla'.swapcase(), 'İi'.swapcase(), 'Hello123World'.swapcase(), 'σς'.swapcase()]
