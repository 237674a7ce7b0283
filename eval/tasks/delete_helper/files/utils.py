def shout(text):
    return text.upper()


def unused_helper(items):
    result = []
    for item in items:
        result.append(item * 2)
    return result


def whisper(text):
    return text.lower()
