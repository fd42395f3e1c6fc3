config = {"paths": None}
for p in (
    config["paths"]
):
    print(p)
