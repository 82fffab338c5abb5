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

# Two *different* manifests (lr 1e-3 and 1e-2) started together on one experiment folder, again
# and again: each point serves one configuration, so one process trains a point's seeds and the
# other is refused at that point, naming the key; never a point whose seeds mix the two. The first
# run of a point records its configuration (point.toml) under a lock before anything trains.
tiny_sweep "[1, 2]" 2 256 "threads = 1
lr = 0.001" >"$work/slow.toml"
tiny_sweep "[1, 2]" 2 256 "threads = 1
lr = 0.01" >"$work/fast.toml"
sed -i 's/^seeds = /name = "mixed"\nseeds = /' "$work/slow.toml" "$work/fast.toml"
for round in 1 2 3 4 5 6; do
  rm -rf "$work/mixed"
  "$pelab" run "$work/slow.toml" --out "$work/mixed" --no-report --quiet >"$work/slow.txt" 2>&1 &
  a=$!
  "$pelab" run "$work/fast.toml" --out "$work/mixed" --no-report --quiet >"$work/fast.txt" 2>&1 &
  b=$!
  wait "$a" && sa=0 || sa=$?
  wait "$b" && sb=0 || sb=$?
  for point in "$work"/mixed/mixed/*/; do
    lrs=$(cat "$point"seed-*/config.toml 2>/dev/null | grep '^lr = ' | sort -u)
    [ "$(echo "$lrs" | grep -c .)" -le 1 ] ||
      fail "round $round: $point mixes two configurations: $(echo $lrs)"
    [ -f "$point/point.toml" ] || fail "round $round: $point has no point.toml"
    grep -qF "$(echo "$lrs" | head -1)" "$point/point.toml" ||
      fail "round $round: $point's runs are not of the configuration its point.toml records"
  done
  # Both ending well means one of them found every point free: it trained them all first.
  if [ "$sa" != 0 ] || [ "$sb" != 0 ]; then
    grep -q "serves another configuration" "$work/slow.txt" "$work/fast.txt" ||
      { cat "$work/slow.txt" "$work/fast.txt"; fail "round $round: a refusal that does not say why"; }
    grep -q "train.lr: " "$work/slow.txt" "$work/fast.txt" ||
      fail "round $round: the refusal does not name the differing key"
  fi
done
echo PASS
