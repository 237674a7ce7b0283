# top-level, outside src
