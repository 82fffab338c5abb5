#!/usr/bin/env bash
# Compile time of the same translation units with two build folders' compilers, side by side in
# one run: each file is compiled with A, then B, then A, ... (ROUNDS times), with the exact
# command line of each folder's compile_commands.json, one compiler at a time. Prints the median
# seconds per file and the ratio B/A. The precompiled headers must already be built in both.
#
#   benchmarks/compile_time.sh BUILD_A BUILD_B [ROUNDS] [FILE...]
#   e.g. benchmarks/compile_time.sh build-gcc build-clang 3
set -euo pipefail
a=$(realpath "$1") b=$(realpath "$2")
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(core/src/training/trainer.cpp core/src/config/manifest.cpp
  plugins/pe/learned/learned.cpp plugins/probe/rsa/rsa.cpp tests/core/config/params_test.cpp
  apps/pelab/report/collect.cpp)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

/usr/bin/python3 - "$a" "$b" "$rounds" "$source_dir" "$out" "${files[@]}" <<'PY'
import json, os, shlex, statistics, subprocess, sys, time
a, b, rounds, source, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
files = sys.argv[6:]

def commands(build):
    table = {}
    for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
        table[os.path.relpath(entry["file"], source)] = entry
    return table

def compiler_of(command):
    words = shlex.split(command)  # compile_commands.json names the compiler, not the launcher
    return os.path.basename(words[0]), words

tables = {"A": commands(a), "B": commands(b)}
names = {}
print(f"{'file':44} {'A s':>7} {'B s':>7} {'B/A':>6}")
ratios = []
for f in files:
    times = {"A": [], "B": []}
    for _ in range(rounds):
        for side in ("A", "B"):
            entry = tables[side][f]
            names[side], words = compiler_of(entry["command"])
            words[words.index("-o") + 1] = os.path.join(out, "x.o")
            start = time.monotonic()
            subprocess.run(words, cwd=entry["directory"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[side].append(time.monotonic() - start)
    ma, mb = statistics.median(times["A"]), statistics.median(times["B"])
    ratios.append(mb / ma)
    print(f"{f:44} {ma:7.1f} {mb:7.1f} {mb / ma:6.2f}")
print(f"A = {names['A']} ({a}), B = {names['B']} ({b}); median of {rounds} per file; "
      f"median ratio B/A {statistics.median(ratios):.2f}")
PY
