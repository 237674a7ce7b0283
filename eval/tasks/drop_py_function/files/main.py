from parser_utils import parse_all

print(dict(parse_all(["host = localhost", "port=80"])))
