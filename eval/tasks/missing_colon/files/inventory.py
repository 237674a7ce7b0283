STOCK = {"apples": 12, "pears": 20, "plums": 10}


def total(stock)
    return sum(stock.values())


print(f"Total items: {total(STOCK)}")
