from calc import add, subtract, multiply

assert add(2, 3) == 5
assert subtract(10, 4) == 6, "subtract(10, 4) should be 6"
assert multiply(3, 4) == 12
print("all tests passed")
