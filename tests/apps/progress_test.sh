#!/usr/bin/env bash
# What `pelab run -j 2` shows while its workers train. On a terminal (a pty, through script(1)):
# a live block redrawn in place, one line per running run (epoch/total, loss, ETA) and one for the
# sweep (at most twice a second), and the lines that stay ("[k/n] ... done") intact. In a log
# (a pipe): one plain line per evaluation per run, no escape sequences. With --quiet: neither.
set -euo pipefail
pelab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

source "$(dirname "$0")/tiny_sweep.sh"
# 2 points x 1 seed, 40 epochs of 64 steps (about 4 s a run here, so that a host several times
# faster still redraws the block while they train), evaluated every 10: 4 evaluations.
tiny_sweep "[1]" 40 2048 "eval_every = 10
threads = 1" >"$work/progress.toml"

script -qfec "'$pelab' run '$work/progress.toml' -j 2 --out '$work/tty' --no-report" \
  "$work/tty.txt" >/dev/null || { cat "$work/tty.txt"; fail "pelab run -j 2 on a pty failed"; }
tty=$(tr -d '\r' <"$work/tty.txt")
for point in "pe.init.std=0.2 seed 1" "pe.init.std=2 seed 1"; do
  grep -qE "  $point  epoch [0-9]+/40  loss [0-9.]+  [0-9.]+ steps/s  ETA " <<<"$tty" ||
    { echo "$tty"; fail "no live line of $point"; }
  grep -qE "^(.\[[0-9]+F.\[J)?\[[12]/2\] $point: done$" <<<"$tty" ||
    { echo "$tty"; fail "the line that stays for $point is not whole"; }
done
grep -qE '  sweep: [0-9]/2 done, [0-9] running, [0-9] to start; time left ' <<<"$tty" ||
  fail "no sweep line on the terminal"
grep -qF $'\e[J' <<<"$tty" || fail "the block is not redrawn in place"

"$pelab" run "$work/progress.toml" -j 2 --out "$work/log" --no-report >"$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; fail "pelab run -j 2 into a log failed"; }
evaluations=$(grep -cE ' epoch (10|20|30|40)/40  loss [0-9.]+  [0-9.]+ steps/s  ETA .*  train/all/loss=' \
  "$work/log.txt" || true)
[ "$evaluations" = 8 ] || { cat "$work/log.txt"; fail "$evaluations evaluation lines in the log, not 8"; }
if grep -q $'\e' "$work/log.txt"; then fail "escape sequences in a log"; fi

"$pelab" run "$work/progress.toml" -j 2 --out "$work/quiet" --no-report --quiet >"$work/quiet.txt" 2>&1
if grep -q "epoch" "$work/quiet.txt"; then cat "$work/quiet.txt"; fail "--quiet printed progress"; fi
echo "progress: live block on a pty, $evaluations evaluation lines in a log, none with --quiet"
