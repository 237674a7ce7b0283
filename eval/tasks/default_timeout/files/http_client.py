def fetch(url, timeout=10, retries=2):
    """Pretend to fetch url."""
    return f"GET {url} (timeout {timeout}s, {retries} retries)"


def post(url, body, timeout=10):
    return f"POST {url} (timeout {timeout}s)"
