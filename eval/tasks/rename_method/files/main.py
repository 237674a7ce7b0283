from geometry import Circle

c = Circle(5)
print(f"Area: {c.get_area():.2f}")
