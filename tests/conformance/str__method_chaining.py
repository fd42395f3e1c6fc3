'  Hello, World  '.strip().lower().replace(',', '').split(' ')
