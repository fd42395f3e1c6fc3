[(-2.0).is_integer(), (1e16 + 0.5).is_integer(), (0.1 * 10).is_integer(), (2.5 * 2).is_integer()]
