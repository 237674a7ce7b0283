from parser import parse_line

print(parse_line("a, b ,c"))
