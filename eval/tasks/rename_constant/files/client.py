from config import BASE_URL, TIMEOUT, RETRIES


def describe():
    return f"timeout={TIMEOUT}"


if __name__ == "__main__":
    print(describe())
