# expect-difference: format(n, 'c') of a surrogate code point in a program without a surrogate escape is a ValueError in lackpy (it holds surrogates only in surrogate mode); CPython makes the lone surrogate
f'{55296:c}'
