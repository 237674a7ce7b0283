import unittest


class MathTests(unittest.TestCase):
    def test_case_0(self):
        self.assertEqual(0 + 1, 1)

    def test_case_1(self):
        self.assertEqual(1 + 1, 2)

    def test_case_2(self):
        self.assertEqual(2 + 1, 3)

    def test_case_3(self):
        self.assertEqual(3 + 1, 4)

    def helper(self):
        return 1


def test_standalone():
    assert True


def test_another():
    assert 2 > 1


def setup_module():
    pass


if __name__ == "__main__":
    unittest.main()
