#!/usr/bin/python3
"""Every difference the docs state from a shipped run-record archive, re-derived.

Each row of docs/results/claims.tsv names a doc, an archive, and one comparison of `pelab report`:
a row of its comparisons.csv (kinds `points`, `instances:KEY`), or one asked for by name (`compare`,
`pelab report --compare A B`). The archive is unpacked, reported, and the comparison's text, as the
docs quote it, must be in the doc. A doc whose numbers and the archive disagree fails the suite.

The cells of the docs' tables too: a table whose values come from an archive is preceded by a
`<!-- cells ... -->` comment that says which archive, experiment and report options, which point of
its results.csv each row is, and which metric each column shows (see docs/results/README.md, "The
tables' cells"); each cell's mean (and its "± SEM") must be results.csv's at the decimals the cell
shows, and a per-seed cell its run's value. Every table with a "MEAN ± SEM" cell has such a
comment, or one that says why no archive backs it. A self-test first shows that the check catches
what it is for.

Usage: docs_claims_test.py PELAB SOURCE_DIR

One `pelab report` per archive and set of report options, and one `pelab report --compare` per
archive, set of options and the pairs its rows ask for together: the named comparisons' quotes stop
before their Holm p, which is the only number asking for several at once changes.
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

COLUMNS = ["doc", "archive", "experiment", "kind", "metric", "a", "b", "factor", "decimals",
           "options"]


def main(pelab, source_dir):
    self_test()
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

        reported = {}

        def reported_folder(archive, experiment, options):
            # The experiment's folder once `pelab report` with these options has written its
            # results.csv and comparisons.csv there: one report per archive and options.
            key = (archive, experiment, options)
            if key not in reported:
                folder = os.path.join(unpack(archive, "report " + options), experiment)
                if not os.path.isdir(folder):
                    sys.exit(f"FAIL: {archive} holds no experiment folder {experiment}")
                report([folder, "--gnuplot", "/nonexistent/gnuplot", *options.split()])
                reported[key] = folder
            return reported[key]

        quotes = {}  # id(row) -> the text the doc must say, or an error

        # `points` and `instances:KEY` rows: one report per archive and options.
        by_report = defaultdict(list)
        for row in rows:
            if row["kind"] != "compare":
                by_report[(row["archive"], row["experiment"], row["options"])].append(row)
        for (archive, experiment, options), group in by_report.items():
            folder = reported_folder(archive, experiment, options)
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

        cells_failed, cells_checked, tables, unrecorded = check_cells(source_dir, reported_folder)

    print(f"{checked} claim(s) of the docs re-derived from their archives")
    print(f"{cells_checked} cell(s) of {tables} table(s) re-derived from their archives "
          f"({unrecorded} table(s) with no archive yet, each saying why)")
    if failed or cells_failed:
        sys.exit(f"{failed} of {checked} claim(s) and {cells_failed} of {cells_checked} cell(s) of "
                 f"the docs disagree with their archives")


# A table's cell: a mean with as many decimals as the doc shows, a "%" when it is shown as a
# percentage, an optional "± SEM", and an optional note in parentheses ("1 (itself)").
CELL = re.compile(r"^([-+]?\d*\.?\d+)(%?)(?:\s*±\s*(\d*\.?\d+)(%?))?(?:\s*\(.*\))?$")
EMPTY_CELLS = {"", "-", "—", "n/a"}


def split_row(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_constraints(text, where):
    # "k=v, k=v" -> [(k, v)]
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" not in item:
            raise ValueError(f"{where}: '{item}' is not KEY=VALUE")
        key, value = item.split("=", 1)
        pairs.append((key.strip(), value.strip()))
    return pairs


def same_value(shown, value):
    shown, value = shown.strip("`* "), value.strip("`* ")
    try:
        return float(shown) == float(value) or abs(float(shown) - float(value)) <= 1e-12 * max(
            abs(float(shown)), abs(float(value)))
    except ValueError:
        return shown == value


def point_factors(point):
    # "task.dims=2,pe=learned+init=normal+std=0.2" -> {task.dims: 2, pe: learned, init: normal,
    # std: 0.2}
    return dict(token.split("=", 1) for part in point.split(",") for token in part.split("+")
                if "=" in token)


def as_shown(value, decimals):
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def parse_marker(lines, where):
    """The parts of a table's `<!-- cells ... -->` comment, or None when it says the table has no
    archive yet (`<!-- cells unrecorded: why -->`).

        <!-- cells ARCHIVE EXPERIMENT [pelab report options]
        source NAME: ARCHIVE EXPERIMENT [options]     (more archives, picked by source=NAME)
        where: KEY=VALUE, ...                         (of every cell)
        | COLUMN | FACTOR |                           (the point's FACTOR is the row's cell)
        | COLUMN | LABEL = KEY=VALUE, ...; LABEL = ... |   (what a row's label in COLUMN stands for;
                                                       "LABEL = unrecorded": a row no archive backs)
        | COLUMN | [METRIC] [xFACTOR] [@ KEY=VALUE, ...] |  (a column of values; "M1 / M2 / M3":
                                                         cells "a / b / c", a value of each)
        -->

    A cell is the point whose factors are all the KEY=VALUE that apply to it (its row's, its
    column's, the where's), of the source `source=NAME` names (the first line's otherwise); its
    metric is the column's or a `metric=` among them; its value times the column's FACTOR.
    """
    file, line_number = where.rsplit(":", 1)
    head = lines[0].split("<!--", 1)[1].strip().removesuffix("-->").split()
    if head[:1] != ["cells"]:
        raise ValueError(f"{where}: a table's comment starts with 'cells'")
    if head[1:2] == ["unrecorded:"]:
        if len(head) < 3:
            raise ValueError(f"{where}: 'cells unrecorded:' says why (which manifest, its cost)")
        return None
    if len(head) == 2:
        raise ValueError(f"{where}: 'cells ARCHIVE EXPERIMENT [report options]', or "
                         f"'cells unrecorded: WHY'")
    marker = {"sources": {}, "where": [], "columns": {}}
    if len(head) > 2:
        marker["sources"][""] = (head[1], head[2], " ".join(head[3:]))
    for offset, line in enumerate(lines[1:], 1):
        line = line.strip().removesuffix("-->").strip()
        at = f"{file}:{int(line_number) + offset}"
        if not line:
            continue
        if line.startswith("where:"):
            marker["where"] += parse_constraints(line[len("where:"):], at)
            continue
        if line.startswith("source "):
            name, _, text = line[len("source "):].partition(":")
            words = text.split()
            if not name.strip() or len(words) < 2:
                raise ValueError(f"{at}: 'source NAME: ARCHIVE EXPERIMENT [report options]'")
            marker["sources"][name.strip()] = (words[0], words[1], " ".join(words[2:]))
            continue
        parts = split_row(line)
        if not line.startswith("|") or len(parts) != 2:
            raise ValueError(f"{at}: '{line}': a line of a cells comment is 'where: KEY=VALUE, "
                             f"...', 'source NAME: ARCHIVE EXPERIMENT' or '| COLUMN HEADER | "
                             f"WHAT |'")
        header, spec = parts
        words = spec.split()
        if " = " in spec:  # row labels: "LABEL = k=v, k=v; LABEL = ..."
            labels = {}
            for entry in filter(None, (e.strip() for e in spec.split(";"))):
                label, _, constraints = entry.partition(" = ")
                # A row no archive backs yet: "LABEL = unrecorded", its cells not checked.
                labels[label.strip().strip("`*")] = (
                    None if constraints.strip() == "unrecorded"
                    else parse_constraints(constraints, at))
            marker["columns"][header] = ("labels", labels)
        elif words and ("/" in words[0] or words[0] == "@" or re.fullmatch(r"x[0-9.e+-]+",
                                                                           words[0])):
            values, _, at_part = spec.partition("@")
            words = values.split()
            metric = words.pop(0) if words and "/" in words[0] else None
            while metric and words[:1] == ["/"] and len(words) > 1:
                # "M1 / M2 / M3": cells "a / b / c", one value of each metric
                metric = (metric if isinstance(metric, list) else [metric]) + [words[1]]
                words = words[2:]
            factor = 1.0
            for word in words:
                if not re.fullmatch(r"x[0-9.e+-]+", word):
                    raise ValueError(f"{at}: '{word}': a column of values is '[METRIC] [xFACTOR] "
                                     f"[@ KEY=VALUE, ...]'")
                factor = float(word[1:])
            marker["columns"][header] = ("values", metric, factor, parse_constraints(at_part, at))
        elif len(words) == 1:  # a factor whose value the row's cell gives
            marker["columns"][header] = ("factor", spec)
        else:
            raise ValueError(f"{at}: '{spec}': a column is a factor (pe.init.std), values "
                             f"(test/all/mse [x100] [@ KEY=VALUE, ...]) or row labels "
                             f"(LABEL = KEY=VALUE, ...; LABEL = ...)")
    if not marker["sources"]:
        raise ValueError(f"{where}: no archive: 'cells ARCHIVE EXPERIMENT' or 'source NAME: ...'")
    return marker


def read_results(folder):
    """The report's results.csv: point -> metric -> (mean, SEM); under "": the folder."""
    values = defaultdict(dict)
    with open(os.path.join(folder, "results.csv")) as f:
        for r in csv.DictReader(f):
            values[r["point"]][r["metric"]] = (float(r["mean"]),
                                               float(r["sem"]) if r["sem"] else None)
    values[""] = folder
    return values


def run_value(folder, point, seed, metric):
    """One run's final value of a metric: summary.json's "final", or for probe/NAME/KEY its probe
    record's scalar; None when the run or the value is not there."""
    run = os.path.join(folder, point, f"seed-{seed}")
    parts = metric.split("/")
    if parts[0] == "probe" and len(parts) == 3:
        path, read = os.path.join(run, "probes", parts[1] + ".json"), \
            lambda record: record["scalars"].get(parts[2])
    else:
        path, read = os.path.join(run, "summary.json"), lambda record: record["final"].get(metric)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return read(json.load(f))


def check_table(doc, number, marker, header, body, results):
    """Yields a failure, or None, per checked cell of one table; results: source -> results.csv."""
    missing = [h for h in marker["columns"] if h not in header]
    if missing:
        yield f"{doc}:{number}: the cells comment names columns the table lacks: {missing}"
        return
    twice = [h for h in marker["columns"] if header.count(h) > 1]
    if twice:
        yield f"{doc}:{number}: the table has two columns named {twice}: name them apart"
        return
    for offset, line in enumerate(body, 2):
        at = f"{doc}:{number + offset}"
        cells = dict(zip(header, split_row(line)))
        constraints = list(marker["where"])
        for column, spec in marker["columns"].items():
            cell = cells.get(column, "").replace("**", "").strip("` ")
            if spec[0] == "factor":
                constraints.append((spec[1], cell))
            elif spec[0] == "labels":
                if cell not in spec[1]:
                    yield (f"{at}: '{cell}' in column '{column}' is not one of the cells comment's "
                           f"labels ({', '.join(spec[1])})")
                    break
                if spec[1][cell] is None:
                    break
                constraints += spec[1][cell]
        else:
            for column, spec in marker["columns"].items():
                if spec[0] != "values":
                    continue
                cell = cells.get(column, "").replace("**", "").replace("`", "").strip()
                if cell in EMPTY_CELLS:
                    continue
                if not isinstance(spec[1], list):
                    yield check_cell(at, column, cell, spec, constraints, marker, results)
                    continue
                parts = [part.strip() for part in cell.split(" / ")]
                if len(parts) != len(spec[1]):
                    yield (f"{at}: column '{column}': '{cell}' is not {len(spec[1])} values "
                           f"'{' / '.join(spec[1])}'")
                    continue
                for metric, part in zip(spec[1], parts):
                    if part not in EMPTY_CELLS:
                        yield check_cell(at, column, part, (spec[0], metric, *spec[2:]),
                                         constraints, marker, results)


def check_cell(at, column, cell, spec, constraints, marker, results):
    _, metric, factor, extra = spec
    wanted = []
    source = ""
    for key, value in constraints + extra:
        if key == "metric":
            metric = value
        elif key == "source":
            source = value
        else:
            wanted.append((key, value))
    if source not in marker["sources"]:
        return f"{at}: column '{column}': no source '{source}' in the cells comment"
    if metric is None:
        return f"{at}: column '{column}': no metric (the column's, or metric= of its row)"
    archive = marker["sources"][source][0]
    table = results[source]
    seed = dict(wanted).pop("seed", None)  # one run's value rather than the point's mean
    wanted = [(k, v) for k, v in wanted if k != "seed"]
    points = [p for p in table if p and all(
        k in point_factors(p) and same_value(v, point_factors(p)[k]) for k, v in wanted)]
    if len(points) > 1:  # "pe=learned" is the point with no other factor
        fewest = min(len(point_factors(p)) for p in points)
        points = [p for p in points if len(point_factors(p)) == fewest]
    if len(points) != 1:
        where = ", ".join(f"{k}={v}" for k, v in wanted)
        return (f"{at}: column '{column}': {len(points)} points of {archive} have {where}"
                + (f" ({', '.join(points)})" if points else ""))
    if seed is not None:
        value = run_value(table[""], points[0], seed, metric)
        if value is None:
            return f"{at}: column '{column}': no {metric} for {points[0]}, seed {seed} in {archive}"
        mean, sem = value, None
    elif metric not in table[points[0]]:
        return f"{at}: column '{column}': no {metric} for point {points[0]} in {archive}"
    else:
        mean, sem = table[points[0]][metric]
    match = CELL.match(cell)
    if not match or (seed is not None and match.group(3) is not None):
        return (f"{at}: column '{column}': '{cell}' is not " +
                ("one run's value" if seed is not None else "'MEAN' or 'MEAN ± SEM'"))
    shown_mean, percent, shown_sem, sem_percent = match.groups()
    decimals = len(shown_mean.partition(".")[2])
    expected = as_shown(mean * factor * (100 if percent else 1), decimals)
    shown = as_shown(float(shown_mean), decimals)
    if shown_sem is not None:
        sem_scale = factor * (100 if sem_percent or percent else 1)
        expected += " ± " + ("-" if sem is None else
                             as_shown(sem * sem_scale, len(shown_sem.partition(".")[2])))
        shown += " ± " + shown_sem
    if shown != expected:
        run = points[0] + ("" if seed is None else f", seed {seed}")
        return (f"{at}: column '{column}' ({run}, {metric}): the doc says {shown}, {archive} "
                f"gives {expected}")
    return None


def check_cells(source_dir, reported_folder):
    """Every table of README.md and docs/*.md with a cell "MEAN ± SEM": its cells against its
    archive, or a comment that says why no archive backs it."""
    failed = checked = tables = unrecorded = 0
    docs = ["README.md"] + sorted(os.path.join("docs", name)
                                  for name in os.listdir(os.path.join(source_dir, "docs"))
                                  if name.endswith(".md"))
    for doc in docs:
        with open(os.path.join(source_dir, doc)) as f:
            lines = f.read().split("\n")
        for index, line in enumerate(lines):
            if not (line.startswith("|") and index + 1 < len(lines)
                    and re.fullmatch(r"\|[-:| ]+\|\s*", lines[index + 1])):
                continue
            if index > 0 and lines[index - 1].startswith("|"):
                continue
            end = index + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            body = lines[index + 2:end]
            # The comment right above the table (blank lines between allowed).
            above = index - 1
            while above >= 0 and not lines[above].strip():
                above -= 1
            marker_lines = None
            if above >= 0 and lines[above].rstrip().endswith("-->"):
                start = above
                while start >= 0 and "<!--" not in lines[start]:
                    start -= 1
                if start >= 0 and lines[start].split("<!--", 1)[1].strip().startswith("cells"):
                    marker_lines = (start, lines[start:above + 1])
            if marker_lines is None:
                if any(re.search(r"\d\**\s*±\s*\d", row) for row in body):
                    print(f"FAIL: {doc}:{index + 1}: a table of values with no cells comment "
                          f"above it: say which archive backs it (`<!-- cells ARCHIVE EXPERIMENT "
                          f"... -->`, docs/results/README.md) or why none does (`<!-- cells "
                          f"unrecorded: ... -->`)")
                    failed += 1
                continue
            start, comment = marker_lines
            try:
                marker = parse_marker(comment, f"{doc}:{start + 1}")
            except ValueError as error:
                print(f"FAIL: {error}")
                failed += 1
                continue
            if marker is None:
                unrecorded += 1
                continue
            tables += 1
            results = {name: read_results(reported_folder(*source))
                       for name, source in marker["sources"].items()}
            for failure in check_table(doc, index + 1, marker, split_row(line), body, results):
                checked += 1
                if failure:
                    print(f"FAIL: {failure}")
                    failed += 1
    return failed, checked, tables, unrecorded


def self_test():
    """The cell check catches what it exists for (a double-rounded SEM, a wrong mean, a label the
    comment lacks) and passes cells that agree; run before the docs are read."""
    comment = ["<!-- cells A.tar.xz A", "source b: B.tar.xz B", "| sigma | pe.init.std |",
               "| PE | net = source=b, metric=test/all/mse; learned = pe=learned; "
               "none = unrecorded |",
               "| test MSE | test/all/mse |", "| moved | probe/movement/relative_change @ x=1 |",
               "-->"]
    marker = parse_marker(comment, "self-test.md:1")
    results = {"": {"pe.init.std=0.2,pe=learned+x=1": {
                        "test/all/mse": (0.85945, 0.00748),
                        "probe/movement/relative_change": (0.30499, 0.01)},
                    "pe.init.std=2,pe=learned+x=1": {"test/all/mse": (-0.00004, 0.1)}},
               "b": {"pe.init.std=0.2": {"test/all/mse": (0.5, None)}}}
    header = ["sigma", "PE", "test MSE", "moved"]
    body = ["| 0.2 | learned | **0.859** ± 0.008 | 30% |",  # SEM rounded twice
            "| 0.2 | learned | 0.859 ± 0.007 | 31% |",  # right, then a percentage rounded twice
            "| 2.0 | learned | -0.000 ± 0.10 | - |",  # negative zero shown as the doc shows it
            "| 0.2 | net | 0.5 | - |",  # another archive, the row's metric
            "| 0.2 | none | 9.9 ± 9.9 | 1% |",  # a row no archive backs: not checked
            "| 0.2 | nope | 1 | 1% |"]  # a label the comment lacks
    outcomes = list(check_table("self-test.md", 10, marker, header, body, results))
    # One run's values: a column per seed, read from the run folder.
    with tempfile.TemporaryDirectory() as folder:
        run = os.path.join(folder, "pe=learned", "seed-7")
        os.makedirs(os.path.join(run, "probes"))
        with open(os.path.join(run, "summary.json"), "w") as f:
            json.dump({"final": {"test/all/mse": 0.71249}}, f)
        with open(os.path.join(run, "probes", "rsa.json"), "w") as f:
            json.dump({"scalars": {"spearman": 0.3}}, f)
        per_seed = parse_marker(["<!-- cells A.tar.xz A", "| PE | learned = pe=learned |",
                                 "| seed 7 | @ seed=7 |", "| metric | M = metric=test/all/mse; "
                                 "R = metric=probe/rsa/spearman |", "-->"], "self-test.md:20")
        outcomes += check_table("self-test.md", 30, per_seed, ["PE", "metric", "seed 7"],
                                ["| learned | M | 0.7125 |", "| learned | M | 0.713 |",
                                 "| learned | R | 0.30 |", "| learned | M | 0.712 ± 0.1 |"],
                                {"": {"pe=learned": {}, "": folder}})
    failures = [o for o in outcomes if o]
    expected = ["self-test.md:12: column 'test MSE'", "self-test.md:13: column 'moved'",
                "self-test.md:17: 'nope'", "self-test.md:33: column 'seed 7'",
                "self-test.md:35: column 'seed 7': '0.712 ± 0.1' is not one run's value"]
    if len(outcomes) != 11 or len(failures) != 5 or not all(
            failure.startswith(prefix) for failure, prefix in zip(failures, expected)):
        sys.exit("FAIL: the cell check's self-test:\n" + "\n".join(map(str, outcomes)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
