#!/usr/bin/env bash
# What ccache costs on a cold cache (a fresh machine, CI): each translation unit compiled with its
# exact command from BUILD's compile_commands.json, plainly and through ccache with an empty cache
# directory, alternately, ROUNDS times; prints the median seconds of each and their ratio.
#
#   benchmarks/ccache_cold_cost.sh BUILD [ROUNDS] [FILE...]    e.g. benchmarks/ccache_cold_cost.sh build 3
set -euo pipefail
build=$(realpath "$1")
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(plugins/pe/learned/learned.cpp tests/core/config/params_test.cpp
  core/src/io/file_io.cpp apps/pelab/report/collect.cpp)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

/usr/bin/python3 - "$build" "$rounds" "$source_dir" "$out" "${files[@]}" <<'PY'
import json, os, shlex, statistics, subprocess, sys, tempfile, time
build, rounds, source, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
table = {os.path.relpath(e["file"], source): e
         for e in json.load(open(os.path.join(build, "compile_commands.json")))}
# The sloppiness pelab's CMake launcher sets (CMakeLists.txt).
sloppiness = "pch_defines,time_macros,include_file_mtime,include_file_ctime"
print(f"{'file':44} {'plain s':>8} {'ccache s':>9} {'ratio':>6}")
ratios = []
for f in sys.argv[5:]:
    entry = table[f]
    words = shlex.split(entry["command"])
    words[words.index("-o") + 1] = os.path.join(out, "unit.o")
    times = {"plain": [], "ccache": []}
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(words, cwd=entry["directory"], check=True)
        times["plain"].append(time.perf_counter() - start)
        env = dict(os.environ, CCACHE_DIR=tempfile.mkdtemp(dir=out), CCACHE_SLOPPINESS=sloppiness)
        start = time.perf_counter()
        subprocess.run(["ccache"] + words, cwd=entry["directory"], check=True, env=env)
        times["ccache"].append(time.perf_counter() - start)
    plain, cached = statistics.median(times["plain"]), statistics.median(times["ccache"])
    ratios.append(cached / plain)
    print(f"{f:44} {plain:8.1f} {cached:9.1f} {cached / plain:6.2f}")
print(f"median ratio ccache (cold) / plain: {statistics.median(ratios):.2f}")
PY
