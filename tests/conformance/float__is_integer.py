[(1.0).is_integer(), (1.5).is_integer(), (-0.0).is_integer(), (1e300).is_integer(), float('inf').is_integer(), float('nan').is_integer()]
