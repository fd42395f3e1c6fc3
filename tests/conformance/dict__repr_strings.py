{'it\'s': "say \"hi\"", 'tab\t': 'nl\n', 'é': '😀'}
