from dataclasses import dataclass


@dataclass
class User:
    name: str
    email: str


@dataclass
class Order:
    user: User
    total: float


class Repository:
    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)


def make_user(name):
    return User(name, f"{name}@example.org")


class Cache(Repository):
    pass


def helper():
    return None
