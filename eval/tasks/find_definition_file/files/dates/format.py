from dates.parsing import parse_date


def pretty(text):
    return parse_date(text).strftime("%d %b %Y")
