#!/usr/bin/env bash
# Every difference the docs state from a shipped run-record archive is re-derived here: each row
# of docs/results/claims.tsv names a doc, an archive, and one comparison of `pelab report`'s
# comparisons.csv; the archive is unpacked, reported, and the comparison's text, as the docs quote
# it, must be in the doc. A doc whose numbers and the archive disagree fails the suite.
set -euo pipefail
pelab=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
claims="$source_dir/docs/results/claims.tsv"

failed=0
checked=0
while IFS=$'\t' read -r doc archive experiment kind metric a b factor decimals options; do
  [ -z "$doc" ] || [ "${doc:0:1}" = "#" ] && continue
  # Each archive unpacked apart, once per set of report options (the optional last column, e.g.
  # `--reference-scale 2`): two archives may hold the same experiment (a subset of its runs and
  # all of them), and one archive may be cited with its scales compared two ways.
  unpacked="$work/${archive%.tar.xz}$(printf '%s' "${options:-}" | tr -c 'a-zA-Z0-9.' '_')"
  if [ ! -d "$unpacked/$experiment" ]; then
    mkdir -p "$unpacked"
    tar -xJf "$source_dir/docs/results/$archive" -C "$unpacked"
    # shellcheck disable=SC2086  # the options are words
    "$pelab" report "$unpacked/$experiment" --gnuplot /nonexistent/gnuplot ${options:-} \
      >/dev/null 2>&1 || { echo "FAIL: pelab report ${options:-} on $archive"; exit 1; }
  fi
  # The text the docs quote: difference [95% CI low, high] in the doc's units (the value times
  # `factor`, `decimals` places), p and Holm p to 3 significant digits, n.
  quoted=$(/usr/bin/python3 - "$unpacked/$experiment/comparisons.csv" "$kind" "$metric" "$a" "$b" \
             "$factor" "$decimals" <<'PY'
import csv, sys
path, kind, metric, a, b, factor, decimals = sys.argv[1:]
for row in csv.DictReader(open(path)):
    if (row["kind"], row["metric"], row["a"], row["b"]) == (kind, metric, a, b):
        f = lambda v: f"{float(v) * float(factor):.{decimals}f}"
        print(f"{'+' if float(row['difference']) >= 0 else ''}{f(row['difference'])} "
              f"[95% CI {f(row['ci_low'])}, {f(row['ci_high'])}], "
              f"p = {float(row['p']):.3g}, Holm p = {float(row['p_holm']):.3g}, n = {row['n']}")
        break
else:
    sys.exit(f"no comparison {kind} {metric}: {b} - {a} in {path}")
PY
) || { failed=$((failed + 1)); continue; }
  checked=$((checked + 1))
  # As the doc's text reads, whatever its line breaks.
  if ! /usr/bin/python3 -c 'import re, sys
text = re.sub(r"\s+", " ", open(sys.argv[1]).read())
sys.exit(0 if sys.argv[2] in text else 1)' "$source_dir/$doc" "$quoted"; then
    echo "FAIL: $doc does not say what $archive gives for $metric, $b - $a ($kind):"
    echo "  $quoted"
    failed=$((failed + 1))
  fi
done <"$claims"
# The transfer tests of docs/robustness.md (groups of source runs, unpaired): computed by
# docs/results/transfer_many.py from its archive, each line as the doc's tables quote it.
transfer="$work/transfer"
mkdir -p "$transfer"
tar -xJf "$source_dir/docs/results/netsim-transfer-many.tar.xz" -C "$transfer"
while IFS= read -r quoted; do
  checked=$((checked + 1))
  if ! /usr/bin/python3 -c 'import re, sys
text = re.sub(r"\s+", " ", open(sys.argv[1]).read()).replace("[95% CI ", "[")
sys.exit(0 if sys.argv[2] in text else 1)' "$source_dir/docs/robustness.md" "$quoted"; then
    echo "FAIL: docs/robustness.md does not say what netsim-transfer-many.tar.xz gives: $quoted"
    failed=$((failed + 1))
  fi
done < <(/usr/bin/python3 "$source_dir/docs/results/transfer_many.py" --claims \
           "$transfer/netsim-transfer-many" || echo "transfer_many.py failed")
[ "$failed" = 0 ] || exit 1
echo "$checked claim(s) of the docs re-derived from their archives"
