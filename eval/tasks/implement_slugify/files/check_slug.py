from slug import slugify

cases = {"Hello  World": "hello-world", "Pirn Is Small": "pirn-is-small", "one": "one"}
bad = [k for k, v in cases.items() if slugify(k) != v]
print("PASS" if not bad else f"FAIL: {bad}")
