def greet(name):
    title = "Dr. " if name in ("Ada", "Grace") else ""
    return f"Welcome, {title}{name}!"
