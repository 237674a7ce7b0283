def reverse_words(sentence):
    """Return the words of sentence in reverse order, joined by single spaces."""
    pass
