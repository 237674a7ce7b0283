def load_users(path):
    users = []
    with open(path) as f:
        for line in f:
            name, email = line.rstrip("\n").split(",")
            users.append({"name": name, "email": email})
    return users
