['a', "it's", 'say "hi"', 'both \' and "', '', "'", '"']
