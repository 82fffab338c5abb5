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

# Whether the doc says `quote`, as its text reads whatever its line breaks (and, with a third
# argument, with "[95% CI " read as "[", as the transfer tables write it).
doc_says() {
  /usr/bin/python3 -c 'import re, sys
text = re.sub(r"\s+", " ", open(sys.argv[1]).read())
if len(sys.argv) > 3:
    text = text.replace("[95% CI ", "[")
sys.exit(0 if sys.argv[2] in text else 1)' "$@"
}
# A `compare` row: one comparison asked for by name (`pelab report --compare A B`), possibly
# between the points of two archives ("a.tar.xz+b.tar.xz", their folders "expA+expB"); the doc
# quotes the printed text up to its Holm p (one comparison: Holm p is p).
compare_quote() {
  local archive=$1 experiment=$2 metric=$3 a=$4 b=$5 options=$6
  local archives experiments dirs=() i unpacked printed
  IFS='+' read -ra archives <<<"$archive"
  IFS='+' read -ra experiments <<<"$experiment"
  for i in "${!archives[@]}"; do
    # Apart from the report rows' unpacks: a report writes its files into the folder.
    unpacked="$work/compare-${archives[$i]%.tar.xz}"
    if [ ! -d "$unpacked/${experiments[$i]}" ]; then
      mkdir -p "$unpacked"
      tar -xJf "$source_dir/docs/results/${archives[$i]}" -C "$unpacked"
    fi
    dirs+=("$unpacked/${experiments[$i]}")
  done
  local out_option=()
  [ "${#dirs[@]}" -gt 1 ] && out_option=(--out "$work/compare-out")
  # shellcheck disable=SC2086  # the options are words
  printed=$("$pelab" report "${dirs[@]}" "${out_option[@]}" --compare "$a" "$b" ${options} 2>&1) ||
    { echo "FAIL: pelab report --compare '$a' '$b' on $archive: $printed" >&2; return 1; }
  /usr/bin/python3 -c 'import sys
metric, printed = sys.argv[1], sys.argv[2]
for line in printed.splitlines():
    if line.startswith(metric + ": "):
        print(line[len(metric) + 2:].split(", Holm p = ")[0])
        break
else:
    sys.exit(f"no {metric} in what --compare printed:\n{printed}")' "$metric" "$printed"
}

while IFS=$'\t' read -r doc archive experiment kind metric a b factor decimals options; do
  [ -z "$doc" ] || [ "${doc:0:1}" = "#" ] && continue
  if [ "$kind" = compare ]; then
    quoted=$(compare_quote "$archive" "$experiment" "$metric" "$a" "$b" "${options:-}") ||
      { failed=$((failed + 1)); continue; }
    checked=$((checked + 1))
    if ! doc_says "$source_dir/$doc" "$quoted"; then
      echo "FAIL: $doc does not say what $archive gives for $metric, $b - $a (--compare):"
      echo "  $quoted"
      failed=$((failed + 1))
    fi
    continue
  fi
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
              f"p = {float(row['p']):.3g}, Holm p = {float(row['p_holm']):.3g}, n = "
              + (row["n"] if row["pairing"] == "paired" else f"{row['n_b']} + {row['n_a']}, unpaired"))
        break
else:
    sys.exit(f"no comparison {kind} {metric}: {b} - {a} in {path}")
PY
) || { failed=$((failed + 1)); continue; }
  checked=$((checked + 1))
  if ! doc_says "$source_dir/$doc" "$quoted"; then
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
  if ! doc_says "$source_dir/docs/robustness.md" "$quoted" transfer; then
    echo "FAIL: docs/robustness.md does not say what netsim-transfer-many.tar.xz gives: $quoted"
    failed=$((failed + 1))
  fi
done < <(/usr/bin/python3 "$source_dir/docs/results/transfer_many.py" --claims \
           "$transfer/netsim-transfer-many" || echo "transfer_many.py failed")
[ "$failed" = 0 ] || exit 1
echo "$checked claim(s) of the docs re-derived from their archives"
