#!/usr/bin/env bash
# Uploads the package to the internal index.
set -euo pipefail
touch .ran_publish
echo "uploading $(cat VERSION) to https://packages.example.internal"
