def process(values):
    print("DEBUG: got", values)
    total = sum(values)
    print("DEBUG: total is", total)
    return total * 2


print("result:", process([1, 2, 3]))
