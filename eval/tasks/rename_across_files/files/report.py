from billing import get_total


def summary(prices):
    return f"{len(prices)} items, total {get_total(prices)}"


if __name__ == "__main__":
    print(summary([1.5, 2.25]))
