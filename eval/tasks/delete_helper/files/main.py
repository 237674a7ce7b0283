from utils import shout, whisper

print(shout("hello world"))
