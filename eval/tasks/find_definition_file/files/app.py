from dates.format import pretty

print(pretty("2024-03-01"))
