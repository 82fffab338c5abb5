#!/usr/bin/env bash
# Every manifest shipped with a task (tasks/*/experiments/*.toml) and with the docs stays valid
# against the plugins as they are now.
set -euo pipefail
pelab=$1
source_dir=$2
count=0
for manifest in "$source_dir"/tasks/*/experiments/*.toml; do
  "$pelab" validate "$manifest"
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "no manifests found under $source_dir/tasks"; exit 1; }
echo "$count manifests valid"
