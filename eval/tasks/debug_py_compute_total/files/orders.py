def compute_total(lines):
    print("debug: lines =", lines)
    total = 0.0
    for qty, price in lines:
        total += qty * price
        print("debug: running total", total)
    return total


def report(lines):
    print(f"Total: {compute_total(lines):.2f}")


if __name__ == "__main__":
    report([(2, 3.0), (1, 4.5)])
