[int('  12 '), int('-7'), int('+8'), int('\t42\n'), int('0'), int('-0')]
