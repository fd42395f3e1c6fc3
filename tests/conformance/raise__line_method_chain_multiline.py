raw = "a,b;c"
parts = (raw.replace(";", ",")
            .upper()
            .split(","))
n = (raw
     .index("z"))
