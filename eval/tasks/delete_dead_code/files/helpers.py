def format_name(first, last):
    return f"{first.title()} {last.title()}"


def old_format(first, last):
    # Superseded by format_name; kept by mistake.
    return first + " " + last


def initials(full_name):
    return "".join(part[0].upper() for part in full_name.split())
