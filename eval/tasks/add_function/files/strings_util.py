def shout(text):
    """Upper-case text with an exclamation mark."""
    return text.upper() + "!"


def initials(name):
    """Initials of a full name: 'Ada Lovelace' -> 'AL'."""
    return "".join(part[0].upper() for part in name.split())
