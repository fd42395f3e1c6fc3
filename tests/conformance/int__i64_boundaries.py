big = 9223372036854775807
small = -9223372036854775808
[big + 1, small - 1, small // -1, big * 2, -small, abs(small), small % -1, 4611686018427387904 * 2, 3037000500 * 3037000500, big - small, small * -1, small // 1]
