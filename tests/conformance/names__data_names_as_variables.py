records = [{"id": 7, "type": "csv", "format": "utf8"}, {"id": 9, "type": "json", "format": "ascii"}]
by_type = {}
for rec in records:
    id = rec["id"]
    type = rec["type"]
    format = rec["format"]
    by_type[type] = id
    print(f"{id:>3} {type:<5} {format}")
next = max(by_type.values()) + 1
(by_type, next, id, type)
