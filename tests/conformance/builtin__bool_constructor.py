[bool(), bool(0), bool('0'), bool([[]]), bool(0.0), bool(-1)]
