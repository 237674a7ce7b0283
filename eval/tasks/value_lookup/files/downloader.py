from config import MAX_RETRIES, TIMEOUT_SECONDS


def fetch(url):
    for attempt in range(MAX_RETRIES):
        print(f"try {attempt + 1} of {url} (timeout {TIMEOUT_SECONDS}s)")
    return None
