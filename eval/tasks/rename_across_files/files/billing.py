def get_total(prices):
    """Sum of the prices, rounded to cents."""
    return round(sum(prices), 2)
