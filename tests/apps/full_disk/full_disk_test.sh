#!/usr/bin/env bash
# Where a run cannot write.
#  1. Its disk fills up mid-run (a byte budget on the output folder, enforced by the LD_PRELOAD
#     library small_disk_preload.so, since CI may not mount a small tmpfs): `pelab run` stops
#     with a one-line error naming the file it could not write and why, leaves no temporary file
#     and keeps its last good checkpoint; with space again, the same command resumes the run and
#     it ends with the metrics.csv of a run that never stopped.
#  2. Its output folder cannot be made (a path through a regular file, which fails even for
#     root): a one-line error naming the folder.
set -euo pipefail
pelab=$1
preload=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
one_line_error() {  # FILE: a user error, not a crash report
  grep -q '^error: ' "$1" || fail "no 'error:' line in: $(cat "$1")"
  ! grep -qi 'internal error\|report this as a bug\|terminate called\|frame #' "$1" ||
    fail "a crash report instead of an error: $(cat "$1")"
}

source "$(dirname "$0")/../tiny_sweep.sh"
tiny_sweep "[1]" 12 512 $'threads = 1\n\n[[probe]]\nplugin = "pe_norm"' >"$work/disk.toml"
run=(run "$work/disk.toml" --set 'sweep.pe.init.std=[0.2]' --no-report)
run_dir=disk/pe.init.std=0.2/seed-1

"$pelab" "${run[@]}" --out "$work/straight" >/dev/null
checkpoint_bytes=$(stat -c %s "$work/straight/$run_dir/checkpoint.pt")

# 1. Room for about three epochs of checkpoints, PE snapshots and metrics.
mkdir "$work/small"
status=0
PELAB_TEST_DISK_DIR="$work/small" PELAB_TEST_DISK_BYTES=$((3 * checkpoint_bytes + 8000)) \
  LD_PRELOAD="$preload" "$pelab" "${run[@]}" --out "$work/small" >"$work/full.out" 2>&1 ||
  status=$?
[ "$status" = 1 ] || fail "exit status $status on a full disk, expected 1: $(cat "$work/full.out")"
one_line_error "$work/full.out"
grep -q "No space left on device" "$work/full.out" || fail "the cause is not given: $(cat "$work/full.out")"
grep -q "$work/small/$run_dir/" "$work/full.out" || fail "the file is not named: $(cat "$work/full.out")"
echo "full disk: $(grep '^error: ' "$work/full.out" | head -n 1)"
left=$(find "$work/small" -name '*.tmp.*')
[ -z "$left" ] || fail "temporary files left behind: $left"
ls "$work/small/$run_dir"/checkpoint*.pt >/dev/null 2>&1 || fail "no checkpoint kept"
[ ! -f "$work/small/$run_dir/summary.json" ] || fail "a run that could not finish has a summary.json"

"$pelab" "${run[@]}" --out "$work/small" >"$work/resume.out" 2>&1 ||
  fail "the run did not resume once there was space: $(cat "$work/resume.out")"
grep -q "resumed from the checkpoint" "$work/small/$run_dir/run.log" ||
  fail "the run started over instead of resuming"
cmp -s "$work/straight/$run_dir/metrics.csv" "$work/small/$run_dir/metrics.csv" ||
  fail "the resumed run's metrics.csv differs from the uninterrupted run's"

# 2. An output folder that cannot be made.
touch "$work/a-file"
status=0
"$pelab" "${run[@]}" --out "$work/a-file/out" >"$work/unwritable.out" 2>&1 || status=$?
[ "$status" = 1 ] || fail "exit status $status for an unwritable folder: $(cat "$work/unwritable.out")"
one_line_error "$work/unwritable.out"
grep -q "$work/a-file" "$work/unwritable.out" || fail "the folder is not named: $(cat "$work/unwritable.out")"
echo "unwritable: $(grep '^error: ' "$work/unwritable.out" | head -n 1)"
echo PASS
