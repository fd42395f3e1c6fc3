words = ['\U0001f600', '\udc00', 'b', '\ue000', '\ud800', '\uffff', 'a\ud800', 'a', '\U0010f7fd', '\ud7ff']
[sorted(words), sorted(words, reverse=True), max(words), min(words), sorted(words, key=len)]
