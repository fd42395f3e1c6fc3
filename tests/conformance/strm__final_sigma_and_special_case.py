['ΟΔΟΣ'.lower(), 'ΣΑΣ ΟΔΟΣ.'.lower(), 'ﬁ'.upper(), 'ǆ'.title(), 'ǅ'.istitle(), 'ŉ'.upper(), 'ß'.title()]
