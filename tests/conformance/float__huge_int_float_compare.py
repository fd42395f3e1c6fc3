big = int('1' + '0' * 400)
inf = float('inf')
[big > 1e308, big < inf, big == inf, -big < -1e308, -big > float('-inf'), big > float('nan'), big != float('nan')]
