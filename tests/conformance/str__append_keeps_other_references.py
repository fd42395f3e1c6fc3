# s += t may grow s in place only when nothing else holds it: names, list
# items, dict keys and values, set members, a running loop and a generator
# all keep the old text.
s = "abc" * 10
alias = s
s += "x"
history = []
line = ""
for i in range(5):
    history.append(line)
    line += str(i)
key = "k" * 30
table = {key: 1}
members = {key}
key += "x"
looped = "ab" * 12
for c in looped:
    looped += c.upper()
source = "xyz" * 9
gen = (c for c in source)
source += "!"
config = {"path": "a" * 25}
config["path"] += "/b"
text = "é" * 20
for piece in ["😀", "a", ""]:
    text += piece
print(len(s), len(alias), s is alias, history, line)
[table, sorted(members), key, looped, len(list(gen)), source[-3:], config, text, len(text), text.upper()[-3:]]
