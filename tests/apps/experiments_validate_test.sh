#!/usr/bin/env bash
# Every manifest shipped with a task (tasks/*/experiments/*.toml) and the benchmarks' workloads
# (benchmarks/workloads/*.toml: the large one once broke unnoticed) stay valid against the plugins
# as they are now.
set -euo pipefail
pelab=$1
source_dir=$2
count=0
# From the repository's root, as the manifests' headers say to run them (their data paths, e.g.
# tasks/brain/data/..., are relative to it).
cd "$source_dir"
# Templates for the user's own data: their data paths point at files this machine lacks, so only
# the schemas are checked; so are the transfer manifests, whose PEs are read from a run that
# another manifest makes first (from_run; tests/plugins/init/from_run builds them). Every other
# manifest is built point by point.
# The dataset-instance sweeps are quick manifests built in full here with other data seeds: each
# of their points would generate another network or cohort (minutes), so only their schemas are.
templates=("$source_dir/tasks/brain/experiments/paper.toml"
           "$source_dir/tasks/latin_square/experiments/transfer.toml"
           "$source_dir/tasks/network_simulation/experiments/transfer.toml"
           "$source_dir/tasks/network_simulation/experiments/transfer_many.toml"
           "$source_dir/tasks/network_simulation/experiments/transfer_sources_null.toml"
           "$source_dir/tasks/network_simulation/experiments/data_instances.toml"
           "$source_dir/tasks/brain/experiments/aal_instances.toml")
for manifest in "$source_dir"/tasks/*/experiments/*.toml "$source_dir"/benchmarks/workloads/*.toml; do
  if [[ " ${templates[*]} " == *" $manifest "* ]]; then
    "$pelab" validate "$manifest" --no-build
  else
    "$pelab" validate "$manifest"
  fi
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "no manifests found under $source_dir/tasks"; exit 1; }
echo "$count manifests valid"
