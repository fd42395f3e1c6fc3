t = 'x\ud800y\udbffz'
[t[1], t[1:4], t[::-1], t[-2], t[::2], list(t), [c for c in t if c > 'z'], list(reversed('\ud800\ue000')), list(enumerate('\udc00a'))]
