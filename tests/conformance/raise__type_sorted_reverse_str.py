sorted([1], reverse='yes')
