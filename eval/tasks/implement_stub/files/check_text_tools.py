from text_tools import shout, word_count

assert word_count("") == 0
assert word_count("one") == 1
assert word_count("the quick  brown fox") == 4
assert shout("hi") == "HI!"
print("OK")
