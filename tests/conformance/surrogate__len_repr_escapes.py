s = '\ud800'
[len(s), s, repr(s), 'a\udfffb', '\U0000dc00', '\ud83d\ude00', len('\ud83d\ude00'), '\uDBFF\uDC00', "it's\udc80"]
