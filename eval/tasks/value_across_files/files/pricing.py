from constants import BASE_PRICE, SHIPPING


def final_price():
    return BASE_PRICE * 3 + SHIPPING
