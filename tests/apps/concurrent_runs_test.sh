#!/usr/bin/env bash
# Two `pelab run` of one manifest started together (a second run by mistake, two shells, two
# nodes): each run is trained by exactly one of them, the other leaves it alone, and both end
# well. A third run afterwards finds every run finished.
set -euo pipefail
pelab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/tiny_sweep.sh"
tiny_sweep "[1, 2, 3]" 12 1024 "threads = 1" >"$work/twice.toml"

"$pelab" run "$work/twice.toml" --out "$work/out" --no-report >"$work/a.txt" 2>&1 &
a=$!
"$pelab" run "$work/twice.toml" --out "$work/out" --no-report >"$work/b.txt" 2>&1 &
b=$!
wait "$a" || { cat "$work/a.txt"; fail "the first pelab run failed"; }
wait "$b" || { cat "$work/b.txt"; fail "the second pelab run failed"; }
cat "$work/a.txt" "$work/b.txt"

for log in "$work"/out/twice/*/seed-*/run.log; do
  [ "$(grep -c ' parameters, ' "$log")" = 1 ] || fail "$log: trained $(grep -c ' parameters, ' "$log") times"
done
[ "$(ls "$work"/out/twice/*/seed-*/summary.json | wc -l)" = 6 ] || fail "not 6 finished runs"
trained=$(cat "$work/a.txt" "$work/b.txt" | grep -c "done in")
[ "$trained" = 6 ] || fail "the two processes trained $trained runs between them, not 6"
"$pelab" status "$work/out/twice" >/dev/null || fail "pelab status: not every run is done"
"$pelab" run "$work/twice.toml" --out "$work/out" --no-report | grep -c "already finished" |
  grep -qx 6 || fail "a third pelab run did not find the 6 runs finished"
[ -z "$(find "$work/out" -name 'claim.json' -o -name '*.tmp*')" ] || fail "claims or temporary files left behind"
echo PASS
