# src/main.py
