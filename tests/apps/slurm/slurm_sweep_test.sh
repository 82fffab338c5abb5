#!/usr/bin/env bash
# `pelab slurm` against a real single-node Slurm (local_slurm.sh): a 4-run sweep submitted as a job
# array trains every run exactly once and the dependent job writes the report; an array task
# killed mid-run shows as interrupted in `pelab status`, and `pelab slurm --resubmit-failed`
# resumes it from its checkpoint; and one run trained by the two tasks of an srun step, its ranks
# found from Slurm's variables.
set -euo pipefail
pelab=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
export PATH=$PATH:/usr/sbin
trap '"$here/local_slurm.sh" stop "$work/slurm" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
started=$SECONDS

"$here/local_slurm.sh" start "$work/slurm"
export SLURM_CONF=$work/slurm/slurm.conf
cd "$work"

# Waits until Slurm's queue is empty, at most $1 seconds.
wait_for_queue() {
  for _ in $(seq $(($1 * 5))); do
    [ -z "$(squeue -h -o %i)" ] && return 0
    sleep 0.2
  done
  squeue
  fail "the queue did not empty within $1 s"
}

source "$here/../tiny_sweep.sh"  # the experiment is named for the file: sweep, long

echo "--- a 4-run sweep as a job array"
tiny_sweep "[1, 2]" 4 2048 >sweep.toml
"$pelab" slurm sweep.toml --out out --max-parallel 2 --cpus-per-task 1 | tee submit.txt
grep -q "submitted job array" submit.txt || fail "pelab slurm did not submit"
[ -f out/sweep/slurm/sweep.sbatch ] && [ -f out/sweep/slurm/report.sbatch ] ||
  fail "the sbatch scripts are not in the experiment folder"
wait_for_queue 90
"$pelab" status out/sweep | tee status.txt || { cat out/sweep/slurm/logs/*; fail "not every run is done"; }
for log in out/sweep/*/seed-*/run.log; do
  [ "$(grep -c ' parameters, ' "$log")" = 1 ] || fail "$log: the run was not trained exactly once"
done
[ "$(ls out/sweep/*/seed-*/summary.json | wc -l)" = 4 ] || fail "not 4 finished runs"
[ -f out/sweep/report.html ] && [ -f out/sweep/results.csv ] ||
  { cat out/sweep/slurm/logs/report-*.out; fail "the report job wrote no report"; }
[ "$(ls out/sweep/slurm/logs/*.out | wc -l)" = 5 ] || fail "expected 4 task logs and a report log"

echo "--- a task killed mid-run, then --resubmit-failed"
tiny_sweep "[1]" 150 2048 | sed 's/^"pe.init.std" = .*/"pe.init.std" = [0.2]/' >long.toml
"$pelab" slurm long.toml --out out >/dev/null
metrics=out/long/pe.init.std=0.2/seed-1/metrics.csv
for _ in $(seq 300); do
  epoch=$(tail -n 1 "$metrics" 2>/dev/null | cut -d, -f1 || true)
  [ "${epoch:-0}" -ge 10 ] 2>/dev/null && break
  sleep 0.1
done
[ "${epoch:-0}" -ge 10 ] || fail "the long run did not reach epoch 10 in 30 s"
scancel --name=pelab-long --signal=KILL
wait_for_queue 60
"$pelab" status out/long | tee status.txt && fail "status says done after the kill"
grep -q "interrupted" status.txt || fail "the killed run is not shown as interrupted"
"$pelab" slurm long.toml --out out --resubmit-failed | tee resubmit.txt
grep -q "1 task(s)" resubmit.txt || fail "--resubmit-failed did not send the one interrupted run"
wait_for_queue 90
"$pelab" status out/long || fail "the resubmitted run did not finish"
log=out/long/pe.init.std=0.2/seed-1/run.log
grep "resumed from the checkpoint of epoch" "$log" || fail "the run did not resume from its checkpoint"
[ "$(cut -d, -f1 "$metrics" | grep -v epoch | uniq | sort -n | uniq -d | wc -l)" = 0 ] ||
  fail "metrics.csv repeats an epoch"
"$pelab" slurm long.toml --out out --resubmit-failed | grep -q "nothing to submit" ||
  fail "a finished sweep still had runs to resubmit"

echo "--- one run data-parallel over the 2 tasks of an srun step"
tiny_sweep "[1]" 6 250 | sed 's/^"pe.init.std" = .*/"pe.init.std" = [0.2]/' >ranks.toml
"$pelab" run ranks.toml --out single --quiet --no-report >/dev/null
# The ranks meet on loopback: MASTER_ADDR overrides the step's first host.
MASTER_ADDR=127.0.0.1 srun --ntasks 2 --cpus-per-task 1 --time 2 \
  "$pelab" run ranks.toml --out srun --quiet --no-report >srun.txt 2>&1 ||
  { cat srun.txt; fail "the srun step failed"; }
grep -q "each run data-parallel over 2 ranks (Slurm (srun)), 1 core(s) each (SLURM_CPUS_PER_TASK=1)" srun.txt ||
  { cat srun.txt; fail "the ranks did not come from Slurm's variables"; }
run=ranks/pe.init.std=0.2/seed-1
grep -q '"ranks": 2' "srun/$run/summary.json" || fail "summary.json does not say 2 ranks"
python3 - "single/$run/metrics.csv" "srun/$run/metrics.csv" <<'PY' || fail "srun's run differs"
import csv, sys
a, b = (list(csv.reader(open(path))) for path in sys.argv[1:])
assert [r[:4] for r in a] == [r[:4] for r in b]
worst = max(abs(float(x[4]) - float(y[4])) / max(abs(float(x[4])), 1e-3) for x, y in zip(a[1:], b[1:]))
print(f"  srun's 2 ranks against one process: worst relative difference {worst:.2e}")
sys.exit(0 if worst <= 1e-5 else 1)
PY
echo "PASS in $((SECONDS - started)) s"
