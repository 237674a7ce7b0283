from defaults import BASE_LIMIT, FACTOR


def get_limit():
    return BASE_LIMIT * FACTOR
