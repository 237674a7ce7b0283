def format_full_name(first, last):
    return f"{first} {last}"
