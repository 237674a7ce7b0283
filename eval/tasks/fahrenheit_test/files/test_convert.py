from convert import celsius_to_fahrenheit, fahrenheit_to_celsius

assert celsius_to_fahrenheit(0) == 32, celsius_to_fahrenheit(0)
assert celsius_to_fahrenheit(100) == 212, celsius_to_fahrenheit(100)
assert fahrenheit_to_celsius(212) == 100
print("all conversions ok")
