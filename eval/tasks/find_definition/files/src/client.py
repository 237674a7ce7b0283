from net.protocol import parse_header


def headers(lines):
    return dict(parse_header(l) for l in lines)
