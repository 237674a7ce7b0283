person = {"name": "Ada", "born": 1815}

print(f"Name: {person['nmae']}")
