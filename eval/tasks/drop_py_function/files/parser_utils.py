def parse(line):
    key, _, value = line.partition("=")
    return key.strip(), value.strip()


def old_parse(line):
    # kept from the 1.x format, where values were quoted
    parts = line.split("=")
    if len(parts) != 2:
        return None
    return parts[0].strip(), parts[1].strip().strip('"')


def parse_all(lines):
    return [parse(line) for line in lines if line.strip()]
