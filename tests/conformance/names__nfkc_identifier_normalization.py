ﬁle = 3
[file, ﬁle + 1]
