s = 'aAzZ\u00df\u00e0\u00c0\u00ff\u0130\u0131\u0149\u01c4\u01c5\u01c6\u01f0\u0345\u0390\u03a3\u03c2\u03c3\u03d0\u1e9e\u1f80\u1f88\u1fb3\u1fbc\u2126\u212a\u212b\ufb00\ufb01\ufb03\ufb05\u0587\u10d0\u13a0\uab70\U00010400\U00010428\u2160\u2170\u24b6\u24d0'
[(c + 'x' + c).title() for c in s] + [(c + 'X' + c).capitalize() for c in s] + ['Z' + c + 'Z' for c in s if (c + 'A').istitle()]
