import functools

values = [3, 7, 11, 13]
print(functools.reduce(lambda a, b: a * b, values) - 1664)
