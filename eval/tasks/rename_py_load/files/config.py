import json

DEFAULTS = {"debug": False}


def load(path):
    with open(path) as f:
        data = json.load(f)
    return {**DEFAULTS, **data}


def save(path, data):
    with open(path, "w") as f:
        json.dump(data, f, indent=2)
