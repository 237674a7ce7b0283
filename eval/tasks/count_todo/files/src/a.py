# TODO: handle errors
def a():
    return 1  # TODO tidy
