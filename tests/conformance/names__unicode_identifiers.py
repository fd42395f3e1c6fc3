café = 3
naïve = café * 2
[café, naïve]
