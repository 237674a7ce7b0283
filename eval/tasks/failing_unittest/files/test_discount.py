import unittest

from discount import apply_discount


class DiscountTest(unittest.TestCase):
    def test_quarter_off(self):
        self.assertEqual(apply_discount(200, 25), 150)

    def test_nothing_off(self):
        self.assertEqual(apply_discount(80, 0), 80)


if __name__ == "__main__":
    unittest.main()
