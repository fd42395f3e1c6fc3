s = ('a'  # a comment with a quote: it's
     '\ud83d' '\ude00'
     """
\udfff""")
[s, len(s)]
