price = 3.5
label = f"{price:é}"
