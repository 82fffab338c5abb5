#!/usr/bin/env bash
# The .npy files pelab writes are read by numpy with the right shape, dtype and values.
set -euo pipefail
pelab=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$pelab" run "$source_dir/tasks/marker_position/experiments/smoke.toml" --out "$work" --quiet >/dev/null
run="$work/marker-smoke/default/seed-1"
# Debian's interpreter, where python3-numpy installs (a pyenv python3 may come first on PATH).
/usr/bin/python3 - "$run" <<'PY'
import json, sys
import numpy as np
run = sys.argv[1]
table = np.load(f"{run}/pe/tables-epoch-000004.npy")
assert table.dtype == np.float32, table.dtype
assert table.shape == (2, 8, 32), table.shape           # layers x tokens x d_model of smoke.toml
initial = np.load(f"{run}/pe/tables-epoch-000000.npy")
assert abs(initial.std() - 0.2) < 0.03, initial.std()    # init = normal(std 0.2)
norms = np.load(f"{run}/probes/pe_norm-norms.npy")
assert norms.dtype == np.float64 and norms.shape == (3, 2), (norms.dtype, norms.shape)
expected = np.linalg.norm(table.astype(np.float64).reshape(2, -1), axis=1)
assert np.allclose(norms[-1], expected, rtol=1e-6), (norms[-1], expected)
summary = json.load(open(f"{run}/probes/pe_norm.json"))
assert np.isclose(summary["scalars"]["norm_final"], expected.mean())
print("numpy reads pelab's .npy files:", table.shape, norms.shape)
PY
