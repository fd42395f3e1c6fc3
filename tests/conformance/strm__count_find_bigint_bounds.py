s = "abc"
big = 99999999999999999999
(s.count("", big), s.count("", 3), s.count("", 4), s.find("", big), s.find("c", -big, big), s.startswith("", big), s.rfind("", -big))
