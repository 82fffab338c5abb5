#!/usr/bin/python3
"""Every difference the docs state from a shipped run-record archive, re-derived.

Each row of docs/results/claims.tsv names a doc, an archive, and one comparison of `pelab report`:
a row of its comparisons.csv (kinds `points`, `instances:KEY`), or one asked for by name (`compare`,
`pelab report --compare A B`). The archive is unpacked, reported, and the comparison's text, as the
docs quote it, must be in the doc. A doc whose numbers and the archive disagree fails the suite.

Usage: docs_claims_test.py PELAB SOURCE_DIR

One `pelab report` per archive and set of report options, and one `pelab report --compare` per
archive, set of options and the pairs its rows ask for together: the named comparisons' quotes stop
before their Holm p, which is the only number asking for several at once changes.
"""
import csv
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

COLUMNS = ["doc", "archive", "experiment", "kind", "metric", "a", "b", "factor", "decimals",
           "options"]


def main(pelab, source_dir):
    results = os.path.join(source_dir, "docs", "results")
    rows = []
    with open(os.path.join(results, "claims.tsv")) as claims:
        for number, line in enumerate(claims, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 9:
                sys.exit(f"docs/results/claims.tsv:{number}: {len(fields)} columns, expected 9 or "
                         f"10 ({', '.join(COLUMNS)}), tab-separated")
            row = dict(zip(COLUMNS, fields + [""] * (10 - len(fields))))
            row["line"] = number
            rows.append(row)

    env = dict(os.environ, OMP_NUM_THREADS="1", PELAB_PLUGIN_PATH="")
    docs = {}

    def doc_text(doc):
        # The doc's text whatever its line breaks.
        if doc not in docs:
            with open(os.path.join(source_dir, doc)) as f:
                docs[doc] = re.sub(r"\s+", " ", f.read())
        return docs[doc]

    with tempfile.TemporaryDirectory() as work:
        unpacked = {}

        def unpack(archive, tag):
            # Each archive unpacked apart per use: a report writes its files into the folder, and
            # two archives may hold the same experiment (a subset of its runs and all of them).
            key = (archive, tag)
            if key not in unpacked:
                folder = os.path.join(work, f"{len(unpacked)}-{archive.removesuffix('.tar.xz')}")
                os.makedirs(folder)
                subprocess.run(["tar", "-xJf", os.path.join(results, archive), "-C", folder],
                               check=True)
                unpacked[key] = folder
            return unpacked[key]

        def report(arguments):
            done = subprocess.run([pelab, "report", *arguments], env=env, capture_output=True,
                                  text=True)
            if done.returncode != 0:
                sys.exit(f"FAIL: pelab report {' '.join(arguments)}:\n{done.stdout}{done.stderr}")
            return done.stdout

        quotes = {}  # id(row) -> the text the doc must say, or an error

        # `points` and `instances:KEY` rows: one report per archive and options.
        by_report = defaultdict(list)
        for row in rows:
            if row["kind"] != "compare":
                by_report[(row["archive"], row["experiment"], row["options"])].append(row)
        for (archive, experiment, options), group in by_report.items():
            folder = os.path.join(unpack(archive, "report " + options), experiment)
            report([folder, "--gnuplot", "/nonexistent/gnuplot", *options.split()])
            with open(os.path.join(folder, "comparisons.csv")) as f:
                table = {(r["kind"], r["metric"], r["a"], r["b"]): r for r in csv.DictReader(f)}
            for row in group:
                found = table.get((row["kind"], row["metric"], row["a"], row["b"]))
                if found is None:
                    quotes[id(row)] = (f"no comparison {row['kind']} {row['metric']}: {row['b']} - "
                                       f"{row['a']} in {archive}'s comparisons.csv", None)
                    continue
                factor, decimals = float(row["factor"]), int(row["decimals"])

                def number(value):
                    return f"{float(value) * factor:.{decimals}f}"
                n = (found["n"] if found["pairing"] == "paired"
                     else f"{found['n_b']} + {found['n_a']}, unpaired")
                quotes[id(row)] = (None, (
                    f"{'+' if float(found['difference']) >= 0 else ''}{number(found['difference'])} "
                    f"[95% CI {number(found['ci_low'])}, {number(found['ci_high'])}], "
                    f"p = {float(found['p']):.3g}, Holm p = {float(found['p_holm']):.3g}, n = {n}"))

        # `compare` rows: one `pelab report --compare A B --compare C D ...` per archive(s) and
        # options; the archives and their folders joined with "+" when A and B are in two.
        by_compare = defaultdict(list)
        for row in rows:
            if row["kind"] == "compare":
                by_compare[(row["archive"], row["experiment"], row["options"])].append(row)
        for (archive, experiment, options), group in by_compare.items():
            dirs = [os.path.join(unpack(name, "compare"), folder)
                    for name, folder in zip(archive.split("+"), experiment.split("+"))]
            out = ["--out", os.path.join(work, "compare-out")] if len(dirs) > 1 else []
            pairs = list(dict.fromkeys((row["a"], row["b"]) for row in group))
            printed = report([*dirs, *out, *options.split(),
                              *[word for a, b in pairs for word in ("--compare", a, b)]])
            # Blocks "B = ...\nA = ...\nmethod\nmetric: text" in the order asked.
            blocks = [block for block in printed.split("\n\n") if block.startswith("B = ")]
            if len(blocks) != len(pairs):
                sys.exit(f"FAIL: {len(pairs)} comparisons asked of {archive}, {len(blocks)} "
                         f"printed:\n{printed}")
            lines = {pair: block.splitlines() for pair, block in zip(pairs, blocks)}
            for row in group:
                prefix = row["metric"] + ": "
                text = next((line[len(prefix):] for line in lines[(row["a"], row["b"])]
                             if line.startswith(prefix)), None)
                quotes[id(row)] = ((f"no {row['metric']} in what --compare printed for "
                                    f"{row['b']} - {row['a']}", None) if text is None
                                   else (None, text.split(", Holm p = ")[0]))

        failed = 0
        for row in rows:
            error, quote = quotes[id(row)]
            where = f"docs/results/claims.tsv:{row['line']}"
            if error:
                print(f"FAIL: {where}: {error}")
                failed += 1
            elif quote not in doc_text(row["doc"]):
                print(f"FAIL: {where}: {row['doc']} does not say what {row['archive']} gives for "
                      f"{row['metric']}, {row['b']} - {row['a']} ({row['kind']}):\n  {quote}")
                failed += 1
        checked = len(rows)

        # The transfer tests of docs/robustness.md (groups of source runs, unpaired): computed by
        # docs/results/transfer_many.py from its archive, each line as the doc's tables quote it
        # ("[95% CI " read as "[").
        folder = unpack("netsim-transfer-many.tar.xz", "transfer")
        transfer = subprocess.run(
            [sys.executable, os.path.join(results, "transfer_many.py"), "--claims",
             os.path.join(folder, "netsim-transfer-many")], capture_output=True, text=True)
        if transfer.returncode != 0 or not transfer.stdout.strip():
            sys.exit(f"FAIL: transfer_many.py --claims:\n{transfer.stdout}{transfer.stderr}")
        robustness = doc_text("docs/robustness.md").replace("[95% CI ", "[")
        for quote in transfer.stdout.splitlines():
            checked += 1
            if quote not in robustness:
                print(f"FAIL: docs/robustness.md does not say what netsim-transfer-many.tar.xz "
                      f"gives: {quote}")
                failed += 1

    if failed:
        sys.exit(f"{failed} of {checked} claim(s) of the docs disagree with their archives")
    print(f"{checked} claim(s) of the docs re-derived from their archives")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
