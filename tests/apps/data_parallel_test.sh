#!/usr/bin/env bash
# Data-parallel runs end to end, with real processes on loopback:
#   - `pelab run --nproc-per-node 2` gives the single process's metrics up to float rounding, on
#     a classification task and on masked-node regression, and rank 0 alone writes the run folder;
#   - under torchrun itself (when installed) the same run is byte-identical to --nproc-per-node's;
#   - a rank killed with SIGKILL makes the other fail at once with an error that says so, and the
#     run, started again, resumes from its checkpoint to the same metrics as an uninterrupted run;
#   - a rank that stops answering (SIGSTOP) makes the other fail within --rank-timeout;
#   - contradictory launches are refused.
set -euo pipefail
pelab=$(realpath "$1")
work=$(mktemp -d)
trap '[ -z "${group:-}" ] || kill -KILL -- -"$group" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work"

# Every metric of two metrics.csv files, row by row, within a relative tolerance.
same_metrics() {
  python3 - "$1" "$2" "$3" <<'PY'
import csv, math, sys
a, b, tolerance = list(csv.reader(open(sys.argv[1]))), list(csv.reader(open(sys.argv[2]))), float(sys.argv[3])
assert [r[:4] for r in a] == [r[:4] for r in b], "different rows"
worst = max(abs(float(x[4]) - float(y[4])) / max(abs(float(x[4])), 1e-3) for x, y in zip(a[1:], b[1:]))
print(f"  {len(a) - 1} rows, worst relative difference {worst:.2e}")
sys.exit(0 if worst <= tolerance else 1)
PY
}

cat >marker.toml <<'TOML'
[experiment]
name = "dp"
seeds = [1]
[task]
plugin = "marker_position"
tokens = 8
train_samples = 250
test_samples = 101
[model]
layers = 2
d_model = 32
heads = 2
[pe]
plugin = "learned"
[train]
lr = 3e-3
batch_size = 64
epochs = 6
eval_every = 2
threads = 1
[[probe]]
plugin = "pe_norm"
TOML
cat >netsim.toml <<'TOML'
[experiment]
name = "dp-masked"
seeds = [1]
[task]
plugin = "network_simulation"
nodes = 16
train_windows = 150
test_windows = 41
[model]
layers = 1
d_model = 16
heads = 2
[pe]
plugin = "learned"
[train]
lr = 3e-3
batch_size = 32
epochs = 3
threads = 1
TOML

echo "--- one process against two ranks (batches of 64 over 250 samples: the last one is 58)"
for manifest in marker netsim; do
  "$pelab" run $manifest.toml --out single --quiet --no-report >/dev/null
  "$pelab" run $manifest.toml --out ranks --quiet --no-report --nproc-per-node 2 >ranks.out 2>&1 ||
    { cat ranks.out; fail "$manifest: the two-rank run failed"; }
done
for run in dp/default/seed-1 dp-masked/default/seed-1; do
  same_metrics single/$run/metrics.csv ranks/$run/metrics.csv 1e-5 ||
    fail "$run: two ranks differ from one process by more than 1e-5"
  [ "$(cd single/$run && find . | sort)" = "$(cd ranks/$run && find . | sort)" ] ||
    fail "$run: the two-rank run folder holds other files than the single process's"
  grep -q '"ranks": 2' ranks/$run/summary.json || fail "$run: summary.json does not say 2 ranks"
  grep -q ' parameters, 2 ranks (torchrun variables), each 1 thread (' ranks/$run/run.log ||
    fail "$run: run.log does not name the ranks"
done
grep -q "each run data-parallel over 2 ranks" ranks.out || fail "rank 0 did not say how it runs"
[ "$(grep -c 'experiment .dp-masked' ranks.out)" = 1 ] || fail "the other rank printed too"

if command -v torchrun >/dev/null; then
  echo "--- under torchrun"
  # Debian's torchrun 1.13 on Python 3.11 cannot parse its own default --redirects 0.
  torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 --log_dir "$work/torchrun-logs" \
    --no_python "$pelab" run marker.toml --out torchrun --quiet --no-report >torchrun.out 2>&1 ||
    { cat torchrun.out; fail "the run under torchrun failed"; }
  cmp torchrun/dp/default/seed-1/metrics.csv ranks/dp/default/seed-1/metrics.csv ||
    fail "torchrun's ranks trained another model than --nproc-per-node's"
fi

echo "--- a rank killed mid-run"
sed -e 's/epochs = 6/epochs = 300/' -e 's/eval_every = 2/eval_every = 10/' marker.toml >long.toml
"$pelab" run long.toml --out straight --quiet --no-report --nproc-per-node 2 >/dev/null
# The ranks of a launcher, by their RANK.
rank_pid() {
  for child in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "RANK=$2" && echo "$child"
  done
}
# Waits until the run in folder $1 has evaluated epoch $2 (metrics.csv), at most 60 s.
wait_for_epoch() {
  for _ in $(seq 600); do
    last=$(tail -n 1 "$1/dp/default/seed-1/metrics.csv" 2>/dev/null | cut -d, -f1 || true)
    [ -n "$last" ] && [ "$last" != epoch ] && [ "$last" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "the run in $1 did not reach epoch $2"
}
# Starts long.toml on two ranks into folder $1 with --rank-timeout $2, sends rank 1 the signal $4
# once epoch $3 is evaluated, and waits for the launcher. Sets victim (rank 1's pid), status (the
# launcher's exit status) and elapsed (seconds from the signal to the launcher's end).
signal_rank_one() {
  setsid "$pelab" run long.toml --out "$1" --quiet --no-report --nproc-per-node 2 \
    --rank-timeout "$2" >"$1.out" 2>&1 &
  group=$!
  wait_for_epoch "$1" "$3"
  victim=$(rank_pid "$group" 1)
  [ -n "$victim" ] || fail "no rank 1 under the launcher"
  kill "-$4" "$victim"
  local started=$SECONDS
  status=0
  wait "$group" || status=$?
  elapsed=$((SECONDS - started))
  group=
  cat "$1.out"
}

signal_rank_one killed 120 40 KILL
[ "$status" != 0 ] || fail "the launcher succeeded although rank 1 was killed"
[ "$elapsed" -le 20 ] || fail "rank 0 took ${elapsed} s to notice (the timeout is 120 s)"
grep -q "rank 1 of 2 (pid $victim) was killed by signal 9" killed.out || fail "no word of rank 1"
grep -q "rank 0 of 2: the .* with the other ranks failed" killed.out || fail "rank 0 did not say why"
grep -q '"status": "failed"' killed/dp/default/seed-1/summary.json || fail "the failure is unrecorded"
"$pelab" run long.toml --out killed --quiet --no-report --nproc-per-node 2 >/dev/null ||
  fail "the run did not resume"
grep -q "resumed from the checkpoint of epoch" killed/dp/default/seed-1/run.log || fail "not resumed"
cmp straight/dp/default/seed-1/metrics.csv killed/dp/default/seed-1/metrics.csv ||
  fail "the resumed run's metrics differ from the uninterrupted run's"

echo "--- a rank that stops answering"
signal_rank_one stopped 3 10 STOP
[ "$status" != 0 ] || fail "the launcher succeeded although rank 1 was stopped"
# Rank 0 gives up after 3 s; the launcher then gives rank 1 3 s, SIGTERM, 5 s, SIGKILL.
[ "$elapsed" -le 30 ] || fail "it took ${elapsed} s with a 3 s rank timeout"
grep -q "rank 0 of 2: the .* with the other ranks failed.*rank timeout (3 s)" stopped.out ||
  fail "rank 0 did not say it timed out"
kill -0 "$victim" 2>/dev/null && fail "the stopped rank was left behind"

echo "--- refusals"
"$pelab" run marker.toml --out refused -j 2 --nproc-per-node 2 >refused.out 2>&1 &&
  fail "-j with --nproc-per-node was accepted"
grep -q "give one of them" refused.out || fail "no reason for refusing -j with --nproc-per-node"
WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 "$pelab" run marker.toml --out refused \
  --nproc-per-node 2 >refused.out 2>&1 && fail "--nproc-per-node inside a rank was accepted"
grep -q "WORLD_SIZE is already set" refused.out || fail "no reason for refusing a nested launch"
echo PASS
