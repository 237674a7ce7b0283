def word_count(text):
    """Number of whitespace-separated words in text."""
    raise NotImplementedError


def shout(text):
    return text.upper() + "!"
