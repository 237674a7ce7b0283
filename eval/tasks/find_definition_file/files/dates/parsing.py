from datetime import date


def parse_date(text):
    y, m, d = (int(x) for x in text.split("-"))
    return date(y, m, d)
