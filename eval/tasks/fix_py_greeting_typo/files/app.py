import sys

from greet import greeting
from util import shout

if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "world"
    if "--loud" in sys.argv:
        print(shout(greeting(name)))
    else:
        print(greeting(name))
