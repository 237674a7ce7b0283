def apply_discount(price, percent):
    """The price after taking percent off (percent=25 takes a quarter off)."""
    return price * percent / 100
