# src/pkg/__init__.py
