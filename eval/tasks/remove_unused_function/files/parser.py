def parse_line(line):
    """Split a comma-separated line into stripped fields."""
    return [part.strip() for part in line.split(",")]


def legacy_split(line):
    # old behaviour, kept for reference
    out = []
    for part in line.split(";"):
        out.append(part)
    return out


def parse_lines(text):
    return [parse_line(l) for l in text.splitlines() if l.strip()]
