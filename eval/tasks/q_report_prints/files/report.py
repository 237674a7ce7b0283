from pathlib import Path

SALES = [12, 7, 9, 14]


def post_to_channel(text):
    # stands in for the real webhook call
    Path(".ran_report").write_text(text)


def main():
    total = sum(SALES)
    post_to_channel(f"weekly total {total}")
    print(f"total: {total}")


if __name__ == "__main__":
    main()
