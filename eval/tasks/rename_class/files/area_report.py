from shapes import Rect

r = Rect(3, 4)
print(f"area {r.area()}")
