vals = [-7.5, -1.0, -0.0, 0.0, 0.3, 7.5, 1e300]
divs = [-2, -0.3, 0.5, 3, 1e-300]
[(a // b, a % b) for a in vals for b in divs]
