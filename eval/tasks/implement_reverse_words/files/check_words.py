from words import reverse_words

ok = reverse_words("one two three") == "three two one" and reverse_words("solo") == "solo"
print("OK" if ok else "FAIL")
