def greet():
    return "Hello, team!"


if __name__ == "__main__":
    print(greet())
