int('')
