import tomllib

with open("settings.toml", "rb") as f:
    SETTINGS = tomllib.load(f)

if SETTINGS["app"]["debug"]:
    print("debug mode")
