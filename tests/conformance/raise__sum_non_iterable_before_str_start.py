# sum() takes iter() of its first argument before it rejects a str start.
total = sum(5, "")
