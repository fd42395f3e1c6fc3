(int("\x857"), int("\u2028 7\u3000"), float("\xa01.5\u2029"), int(" \t\n\r\x0b\x0c7"), "\x1c".isspace())
