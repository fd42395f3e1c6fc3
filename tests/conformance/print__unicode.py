print('héllo', '😀', 'Ω', '\u200b')
'done'
