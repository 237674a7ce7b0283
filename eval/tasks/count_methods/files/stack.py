class Stack:
    """A last-in, first-out stack."""

    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()

    def peek(self):
        return self.items[-1]

    def __len__(self):
        return len(self.items)


def make_stack(values):
    s = Stack()
    for v in values:
        s.push(v)
    return s
