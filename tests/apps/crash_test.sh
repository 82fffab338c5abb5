#!/usr/bin/env bash
# A `pelab run -j 2` sweep killed with SIGKILL (the whole process group: parent and workers, no
# chance to clean up) at random moments, five times, then run to the end: every run's metrics.csv
# is byte-identical to an uninterrupted sweep's, and no temporary file, manifest snapshot or
# claim is left behind. The kill times come from a fixed seed, so every run of the test is the
# same test.
set -euo pipefail
pelab=$1
work=$(mktemp -d)
trap 'kill -KILL -- -"${group:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/tiny_sweep.sh"
tiny_sweep "[1, 2]" 40 2048 $'threads = 1\n\n[[probe]]\nplugin = "pe_norm"' >"$work/crash.toml"

"$pelab" run "$work/crash.toml" --out "$work/straight" -j 2 --no-report >/dev/null

RANDOM=2235
for round in 1 2 3 4 5; do
  setsid "$pelab" run "$work/crash.toml" --out "$work/killed" -j 2 --no-report >/dev/null 2>&1 &
  group=$!
  sleep "$((RANDOM % 3 + 1)).$((RANDOM % 10))"
  kill -KILL -- -"$group" 2>/dev/null || true
  wait "$group" 2>/dev/null || true
  echo "round $round: killed at epoch(s)" \
    $(for m in "$work"/killed/crash/*/seed-*/metrics.csv; do [ -f "$m" ] && tail -n 1 "$m" | cut -d, -f1; done)
done
"$pelab" run "$work/crash.toml" --out "$work/killed" -j 2 --no-report >/dev/null ||
  fail "the sweep did not finish after the kills"

for straight in "$work"/straight/crash/*/seed-*/metrics.csv; do
  killed=${straight/straight/killed}
  cmp -s "$straight" "$killed" || fail "${killed#$work/} differs from the uninterrupted run's"
done
[ "$(ls "$work"/killed/crash/*/seed-*/summary.json | wc -l)" = 4 ] || fail "not 4 finished runs"
left=$(find "$work/killed" -name '*.tmp.*' -o -name '.manifest-*' -o -name claim.json)
[ -z "$left" ] || fail "left behind: $left"
echo PASS
