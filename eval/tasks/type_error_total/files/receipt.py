prices = ["4", "5", "6"]

total = 0
for p in prices:
    total = total + p

print("Total: " + str(total))
