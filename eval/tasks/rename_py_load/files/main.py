from config import load

cfg = load("settings.json")
print(f"debug={cfg['debug']}")
