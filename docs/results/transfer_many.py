# Run from the repository root after unpacking docs/results/netsim-transfer-many.tar.xz into runs/:
#   python3 docs/results/transfer_many.py runs/netsim-transfer-many     (numpy)
# With --claims it prints each test as docs/robustness.md quotes it, one a line (the docs_claims
# test checks that the doc says each).
"""The transfer experiment with the source as the unit (issue 51): own-network sources against
other-network sources, and other-network sources against other networks' sources with relabelled
nodes (the shuffled null), unpaired exact permutation over all 252 splits and a bootstrap CI of
the difference of means (10,000 resamples within each group, seed 2235); Holm over the six tests
(frozen and trainable, three metrics) of each comparison."""
import glob, itertools, json, numpy as np, os, re, sys

arguments = [a for a in sys.argv[1:] if a != "--claims"]
claims_only = "--claims" in sys.argv[1:]
root = arguments[0] if arguments else "runs/netsim-transfer-many"
rows = {}
for summary in sorted(glob.glob(f"{root}/*/seed-*/summary.json")):
    point = summary.split("/")[-3]
    s = json.load(open(summary))
    if s.get("status") != "finished":
        continue
    config = open(os.path.dirname(summary) + "/config.toml").read()
    frozen = "trainable = false" in config
    m = re.search(r'run = "([^"]+)"', config)
    group = "fresh"
    if m:
        source = m.group(1)
        group = ("own" if "netsim-transfer-sources/" in source else
                 "shuffled" if "netsim-transfer-sources-shuffled/" in source else "other")
    else:
        group = "fresh " + re.search(r"std = ([0-9.]+)", config.split("[pe]")[1]).group(1)
    values = {"mse": s["final"]["test/all/mse"], "r": s["final"]["test/all/r"]}
    probes = s.get("probes", {})
    for name, scalars in probes.items():
        for k, v in scalars.items():
            values[f"{name}/{k}"] = v
    rows.setdefault((group, frozen if m else None), []).append((point, values))

if not rows:
    sys.exit(f"no finished run under {root}")

def test(a, b):
    a, b = np.array(a), np.array(b)
    obs = b.mean() - a.mean()
    pooled = np.concatenate([a, b]); n = len(a)
    hits = total = 0
    for idx in itertools.combinations(range(len(pooled)), n):
        mask = np.zeros(len(pooled), bool); mask[list(idx)] = True
        d = pooled[~mask].mean() - pooled[mask].mean()
        hits += abs(d) >= abs(obs) - 1e-12 * max(1.0, abs(obs)); total += 1
    rng = np.random.default_rng(2235)
    boots = [rng.choice(b, len(b)).mean() - rng.choice(a, len(a)).mean() for _ in range(10000)]
    return obs, np.percentile(boots, 2.5), np.percentile(boots, 97.5), hits / total

for key, members in sorted(rows.items(), key=str) if not claims_only else []:
    print(key, len(members))
    for point, v in members:
        print("   ", point[:90], {k: round(x, 4) for k, x in v.items() if x is not None and ("mse" in k or "partial" in k or k.endswith("spearman"))})
def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adjusted, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted

for first, second in (("own", "other"), ("other", "shuffled"), ("own", "shuffled")):
    lines = []
    for frozen in (True, False):
        b_rows = rows.get((first, frozen), []); a_rows = rows.get((second, frozen), [])
        if not a_rows or not b_rows:
            continue
        for metric in ("mse", "connectivity/partial_spearman", "rsa/spearman"):
            a = [v[metric] for _, v in a_rows if v.get(metric) is not None]
            b = [v[metric] for _, v in b_rows if v.get(metric) is not None]
            if len(a) < 2 or len(b) < 2:
                continue
            obs, lo, hi, p = test(a, b)
            if claims_only:  # as the doc's tables quote it: MSE to 4 decimals, Spearman to 3
                d = 4 if metric == "mse" else 3
                lines.append((f"{obs:+.{d}f} [{lo:.{d}f}, {hi:.{d}f}], p = {p:.2g}", p))
                continue
            lines.append((f"{'frozen' if frozen else 'trainable'} {metric}: {first} {np.mean(b):.4f} "
                          f"(n={len(b)}) - {second} {np.mean(a):.4f} (n={len(a)}) = {obs:+.4f} "
                          f"[95% CI {lo:.4f}, {hi:.4f}], exact permutation p = {p:.4g}", p))
    for (text, _), adjusted in zip(lines, holm([p for _, p in lines])):
        print(f"{text}, Holm p = {adjusted:.2g}" if claims_only else f"{text}, Holm p = {adjusted:.3g}")
