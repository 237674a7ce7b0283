from shop import discount


def test_discount():
    assert discount(200, 10) == 180
