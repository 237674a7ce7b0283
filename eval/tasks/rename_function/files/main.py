from utils import calc_total

CART = [("pen", 10), ("book", 50)]

if __name__ == "__main__":
    print(f"Total: {calc_total(CART)}")
