#!/usr/bin/env bash
# Copies the database dump next to this script, one folder per day.
set -euo pipefail

here="$(dirname "$0")"
dir="$here/backups/$(date +%F)"
mkdir -p "$dir"
cp /var/lib/app/db.dump "$dir/"
echo "saved to ${dir}"
touch .ran_backup
