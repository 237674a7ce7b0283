def slugify(text):
    """Return text in lower case with its words joined by hyphens."""
    raise NotImplementedError
