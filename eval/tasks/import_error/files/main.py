from names import format_name

print(format_name("Ada", "Lovelace"))
