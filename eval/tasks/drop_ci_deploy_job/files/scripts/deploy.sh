#!/usr/bin/env bash
set -euo pipefail
touch .ran_deploy
echo "deploying to $1"
