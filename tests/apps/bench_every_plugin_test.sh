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
/usr/bin/python3 - "$work/bench.json" "$work/plugins.txt" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
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
