a = 'Straße'
b = 'STRASSE'
[a.casefold() == b.casefold(), a.lower() == b.lower(), 'ǅ'.casefold(), 'ﬃ'.casefold()]
