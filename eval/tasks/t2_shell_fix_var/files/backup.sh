#!/bin/sh
SRC=./data
DEST=./backups
mkdir -p "$DEST"
cp -r "$SRC" "$DESTINATION/"
