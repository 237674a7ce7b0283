"""Settings for the HTTP client."""

BASE_URL = "https://example.org/api"
TIMEOUT = 15
RETRIES = 3
