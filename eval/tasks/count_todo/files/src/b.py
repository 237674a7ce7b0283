def b():
    # TODO: remove
    return 2
