#!/usr/bin/env bash
# Deploys the current build to the host named for the environment in envs.conf.
set -euo pipefail
env_name="${1:?usage: deploy.sh ENV}"
host="$(grep "^${env_name}=" envs.conf | cut -d= -f2 || true)"
if [ -z "$host" ]; then
  echo "unknown environment: $env_name" >&2
  exit 1
fi
touch .ran_deploy
echo "deploying to $host"
