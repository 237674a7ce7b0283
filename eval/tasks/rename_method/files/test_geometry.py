import math
from geometry import Circle

c = Circle(2)
assert abs(c.get_area() - 4 * math.pi) < 1e-9
assert abs(c.circumference() - 4 * math.pi) < 1e-9
print("ok")
