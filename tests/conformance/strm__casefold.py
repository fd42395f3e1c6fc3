['Hello'.casefold(), 'STRASSE'.casefold(), 'Straße'.casefold(), ''.casefold(), 'ΣΑΣ'.casefold()]
