def parse_header(line):
    """Splits 'Name: value' into a pair."""
    name, _, value = line.partition(":")
    return name.strip(), value.strip()
