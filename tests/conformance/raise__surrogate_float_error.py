v = float('\udc00')
