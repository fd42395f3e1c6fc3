t = '\ud800\n\udc00\r\nx'
[t.splitlines(), t.splitlines(True), str('\ud800'), str('\ud800') is not None, bool('\ud800'), list(zip('\ud800\udc00', 'ab'))]
