#!/usr/bin/env bash
# Killing a `pelab run -j` sweep (SIGTERM to the parent alone, as `kill` sends it) stops its
# workers too and removes its manifest snapshot; the parent dies of the signal, as it would have
# without the clean-up, and the interrupted runs are left to resume, not marked finished.
set -euo pipefail
pelab=$1
work=$(mktemp -d)

cat >"$work/long.toml" <<'TOML'
[experiment]
seeds = [1, 2]

[task]
plugin = "marker_position"
tokens = 8
train_samples = 256
test_samples = 16

[model]
layers = 1
d_model = 8
mlp_ratio = 1

[pe]
plugin = "learned"

[train]
epochs = 100000
batch_size = 16
threads = 1
TOML

out="$work/out"
# A worker is a process whose command line holds the output folder; the pattern is read from a
# file so that grep's own command line does not hold it.
printf '%s' "$out" >"$work/pattern"
workers() { grep -l -a -F -f "$work/pattern" /proc/[0-9]*/cmdline 2>/dev/null || true; }
kill_workers() { for f in $(workers); do f=${f#/proc/}; kill -KILL "${f%/cmdline}" 2>/dev/null || true; done; }
trap 'kill_workers; rm -rf "$work"' EXIT

"$pelab" run "$work/long.toml" -j 2 --out "$out" >/dev/null 2>&1 &
parent=$!
for _ in $(seq 300); do
  [ "$(ls "$out"/long/default/seed-*/metrics.csv 2>/dev/null | wc -l)" = 2 ] && break
  sleep 0.1
done
[ "$(ls "$out"/long/default/seed-*/metrics.csv 2>/dev/null | wc -l)" = 2 ] ||
  { echo "FAIL: the two workers did not start within 30 s"; exit 1; }
ls -a "$out/long" | grep -q '^\.manifest-' || { echo "FAIL: no snapshot while the sweep runs"; exit 1; }

kill -TERM "$parent"
status=0
wait "$parent" || status=$?
[ "$status" = 143 ] || { echo "FAIL: the parent exited with $status, not 143 (SIGTERM)"; exit 1; }
for _ in $(seq 50); do
  [ -z "$(workers)" ] && break
  sleep 0.1
done
[ -z "$(workers)" ] || { echo "FAIL: workers still running 5 s after the parent was killed"; exit 1; }
if ls -a "$out/long" | grep -q '^\.manifest-'; then
  echo "FAIL: the manifest snapshot was left behind"; exit 1
fi
for seed in 1 2; do
  [ ! -e "$out/long/default/seed-$seed/summary.json" ] ||
    { echo "FAIL: seed $seed has a summary.json after the interruption"; exit 1; }
  [ -e "$out/long/default/seed-$seed/config.toml" ] || { echo "FAIL: seed $seed lost its run folder"; exit 1; }
done
echo "the interrupted sweep stopped its workers and removed its snapshot"
