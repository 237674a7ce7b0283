#!/usr/bin/env bash
# Increments the patch number in VERSION.
set -euo pipefail
IFS=. read -r major minor patch < VERSION
echo "$major.$minor.$((patch + 1))" > VERSION
