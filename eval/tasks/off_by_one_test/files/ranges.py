def inclusive_range(start, end):
    """The integers from start to end, both included."""
    return list(range(start, end))
