def calc_total(items):
    """Sum of the prices of items."""
    return sum(price for _, price in items)
