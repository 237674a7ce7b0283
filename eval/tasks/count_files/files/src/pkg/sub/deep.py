# src/pkg/sub/deep.py
