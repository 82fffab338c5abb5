#!/usr/bin/env bash
# `pelab bench` runs every plugin on the plugin path at a tiny size (not a timing test: it checks
# that each plugin's benchmark exists and runs). PEs, initializers and tasks must run without
# error; a probe may skip with its reason (e.g. it needs a trained model).
set -euo pipefail
pelab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$pelab" bench --tokens 16 --probe-tokens 16 --d-model 32 --benchmark_min_time=0 \
  --benchmark_format=json --benchmark_out="$work/bench.json" >/dev/null
"$pelab" plugins > "$work/plugins.txt"
# from_run reads its table from a run folder, which no default names: benched again with one.
mkdir -p "$work/run/pe"
/usr/bin/python3 -c "import numpy, sys; numpy.save(sys.argv[1], numpy.ones((1, 16, 32), numpy.float32))" \
  "$work/run/pe/tables-epoch-000010.npy"
"$pelab" bench from_run --kind init --set "run=$work/run" --tokens 16 --d-model 32 \
  --benchmark_min_time=0 --benchmark_format=json --benchmark_out="$work/from_run.json" >/dev/null
/usr/bin/python3 - "$work/bench.json" "$work/plugins.txt" "$work/from_run.json" <<'PY'
import json, sys
from_run = json.load(open(sys.argv[3]))["benchmarks"]
assert from_run and not any(run.get("error_occurred") for run in from_run), from_run
runs = [run for run in json.load(open(sys.argv[1]))["benchmarks"]
        if not run["name"].startswith("init/from_run/")] + from_run
names = {run["name"].split("/")[1] for run in runs}
listed = {line.split()[1] for line in open(sys.argv[2])
          if line.split() and line.split()[0] in ("pe", "init", "task", "probe")}
missing = listed - names
assert not missing, f"plugins without a benchmark: {sorted(missing)}"
failed = [f"{run['name']}: {run['error_message']}" for run in runs
          if run.get("error_occurred") and not run["name"].startswith("probe/")]
assert not failed, "benchmarks that failed:\n" + "\n".join(failed)
skipped = [run["name"] for run in runs if run.get("error_occurred")]
print(f"{len(runs)} benchmarks of {len(names)} plugins ran; probes skipped: {skipped}")
PY
