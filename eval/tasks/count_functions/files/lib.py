import os


def one():
    return 1


def two():
    return 2


def three():
    return 3


def path_of(name):
    return os.path.join("data", name)


def last():
    return "end"
