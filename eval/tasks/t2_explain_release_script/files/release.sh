#!/bin/sh
# Tags the current commit and uploads the build.
set -e
echo ran > .ran_release
env="$1"
version=$(cat VERSION)
git tag "v$version-$env"
scp dist/app.tar.gz "deploy@$env.example.com:/srv/app/"
