values = [10, 12, 20]

total = sum(values
print(f"Total: {total}")
