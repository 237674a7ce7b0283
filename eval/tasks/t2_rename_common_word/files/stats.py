import json


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data


def summarize(data):
    count = len(data)
    top = max(set(data), key=data.count)
    return count, top
