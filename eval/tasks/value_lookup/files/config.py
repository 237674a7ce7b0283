"""Settings of the downloader."""

TIMEOUT_SECONDS = 30
MAX_RETRIES = 7
USER_AGENT = "downloader/1.4"
CHUNK_SIZE = 65536
