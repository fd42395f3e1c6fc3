'x' < None
