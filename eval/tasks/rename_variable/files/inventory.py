qty = 10
qty += 2
label = "apples"
if qty > 5:
    print(f"{label}: {qty}")
