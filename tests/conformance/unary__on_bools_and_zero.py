[-True, +True, -False, not True, -0.0 == 0, -(-0.0), +(-0.0), --1]
