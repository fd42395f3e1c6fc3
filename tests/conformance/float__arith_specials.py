inf = float('inf')
[inf / inf, -inf * -1, 0.0 * inf, inf // 1, inf % 2, 1 / inf, -1 / inf, inf == float('inf'), max(inf, 5), min(-inf, 5)]
