from ops import add, multiply

assert add(2, 3) == 5
assert multiply(3, 4) == 12, multiply(3, 4)
assert multiply(0, 9) == 0
print("ops ok")
