"""mypkg: a small package."""

__version__ = "0.4.1"
