# src/pkg/util.py
