inf = float('inf')
nan = float('nan')
[inf, -inf, nan, inf + 1, inf * 0, inf - inf, nan == nan, nan != nan, inf > 1e308, float('-inf') < -1e308]
