def banner(user):
    return f"Welcom to Ledger, {user}!"
