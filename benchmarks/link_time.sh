#!/usr/bin/env bash
# Link time of a build folder's programs and plugins with GNU ld and with LLD, side by side in one
# run: each link command (from CMake's link.txt files) runs with -fuse-ld=bfd, then with LLD's
# --ld-path, ROUNDS times, into a scratch folder (the build folder is left alone). Prints the
# median seconds of each and their sum over the links measured.
#
#   benchmarks/link_time.sh BUILD [ROUNDS] [COUNT]    e.g. benchmarks/link_time.sh build 3 20
set -euo pipefail
build=$(realpath "$1")
rounds=${2:-3}
count=${3:-20}
lld=$(command -v ld.lld-14 || command -v ld.lld)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

/usr/bin/python3 - "$build" "$rounds" "$count" "$lld" "$out" <<'PY'
import glob, os, re, shlex, statistics, subprocess, sys, time
build, rounds, count, lld, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
links = sorted(glob.glob(os.path.join(build, "**", "link.txt"), recursive=True))
# Programs and shared libraries (a static library's link.txt runs ar, without -o).
links = [l for l in links if "pch" not in l and " -o " in open(l).read()][:count]
totals = {"bfd": 0.0, "lld": 0.0}
print(f"{'link':52} {'bfd s':>7} {'lld s':>7}")
for link in links:
    directory = os.path.dirname(os.path.dirname(os.path.dirname(link)))  # <dir>/CMakeFiles/<t>.dir
    command = open(link).read().strip().split("\n")[0]
    words = shlex.split(command)
    o = words.index("-o")
    words[o + 1] = os.path.join(out, "linked")
    words = [w for w in words if not w.startswith("--ld-path=") and not w.startswith("-fuse-ld=")]
    times = {"bfd": [], "lld": []}
    for _ in range(rounds):
        for name, flag in (("bfd", "-fuse-ld=bfd"), ("lld", "--ld-path=" + lld)):
            start = time.perf_counter()
            subprocess.run([words[0], flag] + words[1:], cwd=directory, check=True)
            times[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in times.items()}
    for k in totals:
        totals[k] += medians[k]
    target = os.path.basename(os.path.dirname(link)).removesuffix(".dir")
    print(f"{target:52} {medians['bfd']:7.2f} {medians['lld']:7.2f}")
print(f"{'sum of ' + str(len(links)) + ' links':52} {totals['bfd']:7.2f} {totals['lld']:7.2f}"
      f"   lld/bfd {totals['lld'] / totals['bfd']:.2f}")
PY
