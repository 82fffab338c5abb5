# Run from the repository root after unpacking a sigma curve's archive into runs/:
#   python3 docs/results/sigma_curve_tables.py runs/netsim-sigma-curve build/bin/pelab --dims=3
#   python3 docs/results/sigma_curve_tables.py runs/brain-sigma-curve build/bin/pelab
# Prints the tables of docs/reproducing.md's "The sigma curve at the paper's 15 seeds" (the
# network's, one dimension of its sweep with --dims; the brain's synthetic cohort) as `pelab report
# [--where task.dims=D] --reference-scale 2` computes them, and (with --claims=FILE) writes the
# claims.tsv rows that the docs_claims test re-derives.
"""A sigma curve's tables from `pelab report` of its run records: mean ± SEM per point, each
learned scale minus sigma 2.0 (paired over seeds, Holm over the five scales), the comparisons
asked for by name, per-seed values and the cost."""
import csv, glob, json, os, statistics, subprocess, sys, tempfile

options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
if len(arguments) != 2 or set(options) - {"dims", "claims"}:
    sys.exit("usage: sigma_curve_tables.py EXPERIMENT_FOLDER PELAB [--dims=D] [--claims=FILE]")
experiment, pelab = arguments
experiment = experiment.rstrip("/")
experiment_name = os.path.basename(experiment)
dims = options.get("dims")
claims_file = options.get("claims")
where = ["--where", f"task.dims={dims}"] if dims else []
prefix = f"task.dims={dims}," if dims else ""
network = experiment_name.startswith("netsim")

SCALES = ["0.1", "0.2", "0.5", "1", "1.5", "2"]
LEARNED = [f"learned, normal std={s}" for s in SCALES]
oracles = glob.glob(f"{experiment}/{prefix}pe=sinusoidal_nd*")
if not oracles:
    sys.exit(f"{experiment} holds no {prefix}pe=sinusoidal_nd point yet: the sweep is not finished "
             f"(`pelab status {experiment}` says what is left)")
oracle = os.path.basename(oracles[0])
ROWS = [(f"{prefix}pe=learned+init=normal+std={s}", f"learned, normal std={s}",
         f"learned sigma {float(s):.1f}", f"sigma {float(s):.1f}") for s in SCALES] + [
    (f"{prefix}pe=random_fixed+init=normal+std=1", "random_fixed, normal std=1",
     "random_fixed (std 1, frozen)", "random_fixed"),
    (f"{prefix}pe=none", "none", "NoPE", "NoPE"),
    (oracle, "sinusoidal_nd", f"sinusoidal {dims or 3}D (oracle)", "sinusoidal")]
PROBES = ([("probe/rsa/spearman", "RSA (distance)"), ("probe/connectivity/spearman", "coupling W"),
           ("probe/connectivity_2/spearman", "FC")] if network else
          [("probe/rsa/spearman", "RSA (centroids)"), ("probe/connectivity/spearman", "FC")]) + [
    ("probe/modularity/q", "modularity Q"), ("probe/decoding/r2", "decoding R^2")]
NAMED = [("learned, normal std=0.2", "sinusoidal_nd"),
         ("learned, normal std=0.2", "learned, normal std=0.1"),
         ("learned, normal std=0.2", "learned, normal std=0.5"),
         ("learned, normal std=0.5", "sinusoidal_nd"),
         ("learned, normal std=1", "random_fixed, normal std=1")]
MSES = ["test/all/mse", "test_high_mask/all/mse"]

out = tempfile.mkdtemp(prefix=f"{experiment_name}-")
subprocess.run([pelab, "report", experiment, "--out", out, "--reference-scale", "2",
                "--gnuplot", "/nonexistent/gnuplot", *where], check=True, capture_output=True)
results = {(r["point"], r["metric"]): r for r in csv.DictReader(open(f"{out}/results.csv"))}
comparisons = list(csv.DictReader(open(f"{out}/comparisons.csv")))
report = open(f"{out}/report.md").read()


def mean_sem(point, metric, decimals, sem=True):
    row = results.get((point, metric))
    if row is None:
        return "-"
    text = f"{float(row['mean']):.{decimals}f}"
    return text + (f" ± {float(row['sem']):.{decimals}f}" if sem and float(row["sem"]) > 0 else "")


def moved(point):
    row = results.get((point, "probe/movement/relative_change"))
    if row is None:
        return "-"
    percent = 100 * float(row["mean"])
    return "0" if percent < 0.05 else f"{percent:.0f}%" if percent >= 10 else f"{percent:.1f}%"


print(f"Mean ± SEM over the seeds{f' ({dims}D)' if dims else ''}:\n")
print("| PE | test MSE | test_high_mask MSE | test r | " + " | ".join(c for _, c in PROBES) +
      " | PE moved |")
print("|---|" + "---:|" * (len(PROBES) + 4))
for point, _, row_name, _ in ROWS:
    cells = [mean_sem(point, m, 4) for m in MSES] + [mean_sem(point, "test/all/r", 3, sem=False)]
    cells += [mean_sem(point, p, 3) for p, _ in PROBES] + [moved(point)]
    print(f"| {row_name} | " + " | ".join(cells) + " |")

# The RSA p-values as the report's probe table combines them (Fisher, count under 0.05).
print("\nRSA p-values (the report's probe table):")
headlines = report.split("## Probes of the final PE", 1)[1].split("Every p-value", 1)[0]
for line in headlines.splitlines():
    if line.startswith("| ") and "Fisher" in line:
        print(" ", line.split(" | ")[0][2:], "->", line.split(" | ")[3])


def quote(row, factor=1, decimals=4):
    f = lambda v: f"{float(v) * factor:.{decimals}f}"
    sign = "+" if float(row["difference"]) >= 0 else ""
    return (f"{sign}{f(row['difference'])} [95% CI {f(row['ci_low'])}, {f(row['ci_high'])}], "
            f"p = {float(row['p']):.3g}, Holm p = {float(row['p_holm']):.3g}, n = {row['n']}")


def against_two(metric, label):
    for row in comparisons:
        if (row["kind"], row["metric"], row["a"], row["b"]) == ("points", metric,
                                                                LEARNED[-1], label):
            return row
    sys.exit(f"no comparison {metric}: {label} - {LEARNED[-1]} in {out}/comparisons.csv")


claims = []
for pair, decimals in (((MSES[0], "test MSE (50% masked)"), (MSES[1], "test_high_mask MSE "
                        "(90% masked)")), 4), ((PROBES[0],
                                                ("probe/decoding/r2", "decoding R^2")), 3):
    print(f"\n| sigma | {pair[0][1]} | {pair[1][1]} |\n|---:|---|---|")
    for scale, label in zip(SCALES[:-1], LEARNED[:-1]):
        cells = [quote(against_two(metric, label), 1, decimals) for metric, _ in pair]
        print(f"| {scale} | " + " | ".join(cells) + " |")
        claims += [("points", metric, LEARNED[-1], label, "1", str(decimals),
                    " ".join(where + ["--reference-scale", "2"])) for metric, _ in pair]

# The comparisons by name, asked together (`--compare A B --compare C D ...`; the quotes stop
# before the Holm p over them, which the docs give as "p unadjusted").
printed = subprocess.run([pelab, "report", experiment, "--out", out, *where,
                          *[w for a, b in NAMED for w in ("--compare", a, b)]],
                         check=True, capture_output=True, text=True).stdout
blocks = [block.splitlines() for block in printed.split("\n\n") if block.startswith("B = ")]
named = {}
for (a, b), lines in zip(NAMED, blocks):
    for line in lines:
        metric, _, text = line.partition(": ")
        named[(a, b, metric)] = text.split(", Holm p = ")[0]
NAMED_PROBES = [(p, c) for p, c in PROBES if p != "probe/decoding/r2"]
for columns in ([(m, m.split("/")[0] + " MSE") for m in MSES], NAMED_PROBES):
    print("\n| B - A | " + " | ".join(c for _, c in columns) + " |\n|---|" + "---|" * len(columns))
    for a, b in NAMED:
        print(f"| {b} - {a} | " + " | ".join(named.get((a, b, m), "-") for m, _ in columns) + " |")
        claims += [("compare", m, a, b, "-", "-", " ".join(where)) for m, _ in columns
                   if (a, b, m) in named]


def per_seed(split):
    heading = f"Masked-token MSE (lower is better), split `{split}`:"
    lines = report.split("## Per seed", 1)[1].split(heading, 1)[1].strip().splitlines()
    names = {label: short for _, label, _, short in ROWS}
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        cells = line.split(" | ")
        label = cells[0][2:]
        table.append(line.replace(f"| {label} |", f"| {names[label]} |") if label in names else
                     line.replace("| point |", "| PE |"))
    return "\n".join(table)


print(f"\nTest MSE per seed:\n\n{per_seed('test')}")
print(f"\ntest_high_mask MSE per seed:\n\n{per_seed('test_high_mask')}")

walls = []
for summary in glob.glob(f"{experiment}/{prefix}pe=*/seed-*/summary.json"):
    record = json.load(open(summary))
    if record.get("status") == "finished":
        walls.append((record["wall_seconds"], record["compute"]["cpu"],
                      record["compute"]["blas_kernel"]))
seconds = [w for w, _, _ in walls]
print(f"\nCost: {len(walls)} runs, median {statistics.median(seconds):.0f} s a run "
      f"({min(seconds):.0f}-{max(seconds):.0f} s), {sum(seconds) / 3600:.2f} core-hours; "
      f"hosts {sorted(set((c, k) for _, c, k in walls))}")

if claims_file:
    with open(claims_file, "w") as f:
        for row in claims:
            f.write("\t".join(["docs/reproducing.md", f"{experiment_name}.tar.xz", experiment_name, *row]) + "\n")
