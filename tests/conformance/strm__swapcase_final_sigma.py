['ǅa ΣΣ'.swapcase(), 'ΣΣ'.swapcase(), 'aΣ'.swapcase(), 'Σ'.swapcase(), 'AΣ b'.swapcase()]
