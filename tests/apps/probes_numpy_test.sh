#!/usr/bin/env bash
# Every probe on a tiny run, then `pelab report`: numpy reads each probe's .npy files with the
# shapes its .json promises, results.csv agrees with the runs' summary.json files (recomputed
# here in Python), and the figures are PNG files.
set -euo pipefail
pelab=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/all.toml" <<'TOML'
[experiment]
name = "all-probes"
seeds = [1, 2]

[task]
plugin = "marker_position"
tokens = 8
train_samples = 64
test_samples = 32

[model]
layers = 2
d_model = 16
mlp_ratio = 1

[pe]
plugin = "learned"
init = { plugin = "normal", std = 0.2 }

[train]
epochs = 2
eval_every = 2
batch_size = 32
threads = 1

[[probe]]
plugin = "rsa"
permutations = 100
[[probe]]
plugin = "procrustes"
[[probe]]
plugin = "decoding"
[[probe]]
plugin = "dimensionality"
[[probe]]
plugin = "movement"
[[probe]]
plugin = "modularity"
labels = [0, 0, 0, 0, 1, 1, 1, 1]
[[probe]]
plugin = "attention"

[sweep]
"pe.init.std" = [0.2, 2.0]
TOML

"$pelab" run "$work/all.toml" --out "$work" --quiet >/dev/null
"$pelab" report "$work/all-probes" >/dev/null
# Debian's interpreter, where python3-numpy installs (a pyenv python3 may come first on PATH).
/usr/bin/python3 - "$work/all-probes" <<'PY'
import csv, glob, json, math, os, shutil, sys
import numpy as np
experiment = sys.argv[1]
runs = sorted(glob.glob(f"{experiment}/*/seed-*"))
assert len(runs) == 4, runs
expected_arrays = {
    "rsa": {"spearman": (2, 2), "pearson": (2, 2), "epochs": (2,), "dissimilarity": (2, 8, 8),
            "ground_truth": (8, 8)},
    "procrustes": {"distance": (2, 2), "epochs": (2,), "reference": (8, 16)},
    "decoding": {"r2": (2, 2, 1), "epochs": (2,)},
    "dimensionality": {"participation_ratio": (2, 2), "explained_variance_ratio": (2, 8),
                       "epochs": (2,)},
    "movement": {"relative_change": (2, 2), "norm": (2, 2), "epochs": (2,)},
    "modularity": {"q": (2, 2), "epochs": (2,), "labels": (8,)},
    "attention": {"maps": (2, 1, 8, 8)},
}
for run in runs:
    summary = json.load(open(f"{run}/summary.json"))
    for probe, shapes in expected_arrays.items():
        document = json.load(open(f"{run}/probes/{probe}.json"))
        assert "error" not in document, (run, probe, document)
        assert sorted(document["arrays"]) == sorted(f"probes/{probe}-{a}.npy" for a in shapes), document
        for name, shape in shapes.items():
            array = np.load(f"{run}/probes/{probe}-{name}.npy")
            assert array.shape == shape, (probe, name, array.shape, shape)
            assert np.all(np.isfinite(array)), (probe, name)
        assert summary["probes"][probe] == document["scalars"], probe
    # Movement recomputed from the PE snapshots.
    tables = sorted(glob.glob(f"{run}/pe/tables-epoch-*.npy"))
    first, last = (np.load(t).astype(np.float64) for t in (tables[0], tables[-1]))
    change = np.linalg.norm((last - first).reshape(2, -1), axis=1) / np.linalg.norm(first.reshape(2, -1), axis=1)
    assert np.allclose(summary["probes"]["movement"]["relative_change"], change.mean(), rtol=1e-5)
    maps = np.load(f"{run}/probes/attention-maps.npy")
    assert np.allclose(maps.sum(-1), 1.0, atol=1e-6)

# results.csv: mean, SEM and n over seeds of every summary.json value, the run's cost too.
rows = {(r["point"], r["metric"]): r for r in csv.DictReader(open(f"{experiment}/results.csv"))}
points = {}
for run in runs:
    summary = json.load(open(f"{run}/summary.json"))
    values = dict(summary["final"])
    for probe, scalars in summary["probes"].items():
        values.update({f"probe/{probe}/{k}": v for k, v in scalars.items()})
    for field in ("steps_per_second", "wall_seconds", "parameters", "threads"):
        values[f"run/{field}"] = summary[field]
    for key, value in values.items():
        points.setdefault((summary["point"], key), []).append(value)
assert len(points) == len(rows), (len(points), len(rows))
combined = 0
for key, values in points.items():
    row = rows[key]
    values = [v for v in values if v is not None]
    mean = sum(values) / len(values)
    sem = (np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0
    assert int(row["n"]) == len(values), (key, row)
    assert math.isclose(float(row["mean"]), mean, rel_tol=1e-12, abs_tol=1e-15), (key, row, mean)
    assert math.isclose(float(row["sem"]), sem, rel_tol=1e-9, abs_tol=1e-15), (key, row, sem)
    assert row["init_scale"] in ("0.2", "2"), row
    # A probe's p-values are combined over the seeds by Fisher's method, here from its closed form
    # (chi^2 with 2k degrees of freedom: exp(-x/2) * sum_{i<k} (x/2)^i / i!), never averaged.
    if key[1].startswith("probe/") and "p_value" in key[1]:
        half = -sum(math.log(v) for v in values)
        fisher = math.exp(-half) * sum(half**i / math.factorial(i) for i in range(len(values)))
        assert math.isclose(float(row["fisher_p"]), fisher, rel_tol=1e-9), (key, row, fisher)
        assert int(row["seeds_below_0.05"]) == sum(v < 0.05 for v in values), (key, row)
        combined += 1
    else:
        assert row["fisher_p"] == row["seeds_below_0.05"] == "", (key, row)
assert combined > 0, "no probe p-value in results.csv to check"

report = open(f"{experiment}/report.html").read()
assert "data:image/png;base64," in report or shutil.which("gnuplot") is None
for png in glob.glob(f"{experiment}/figures/*.png"):
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", png
print("numpy reads every probe's arrays; results.csv matches", len(runs), "summary.json files;",
      combined, "p-values combined by Fisher's method")
PY
