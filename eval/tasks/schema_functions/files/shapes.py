"""Areas and perimeters of simple shapes."""
import math


def circle_area(radius):
    return math.pi * radius ** 2


def _check_positive(value):
    if value <= 0:
        raise ValueError("must be positive")


def rectangle_area(width, height):
    _check_positive(width)
    _check_positive(height)
    return width * height


def square_perimeter(side):
    return 4 * side
