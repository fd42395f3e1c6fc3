xs = ['bb', 'a', 'cc', 'd', 'eee']
xs.sort(key=len, reverse=True)
xs
