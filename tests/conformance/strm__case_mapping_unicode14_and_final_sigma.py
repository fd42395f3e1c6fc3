words = ["ΟΔΥΣΣΕΥΣ", "ΑΣ.", "Σ", "ΑΣ'Β", "ΑΣ\u0301", "ΑΣ\u0301Β", "aΣ b", "ΣΑΣ ΣΑΣ"]
print([w.lower() for w in words])
print([w.capitalize() for w in words], [w.title() for w in words], [w.swapcase() for w in words])
# U+019B and U+0264 gained upper-case forms only after Unicode 14 (CPython 3.11's)
("\u019b".upper(), "\u0264".upper(), "\ua7cb".lower(), "\ua7dc".lower(), "\u1c89".lower(), "ƛɤ".title())
