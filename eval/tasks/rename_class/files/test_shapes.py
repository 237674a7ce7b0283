from shapes import Rect

assert Rect(2, 5).area() == 10
print("ok")
