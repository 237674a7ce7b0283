def greeting(name):
    return f"Helo, {name}!"
