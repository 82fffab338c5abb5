#!/usr/bin/env bash
# What a unity build saves on a cold build (a fresh machine, CI): the tree configured twice in
# scratch folders, PELAB_UNITY_BUILD=ON and OFF, ccache off, then TARGET built from clean in each,
# alternately, ROUNDS times; prints each build's wall and CPU seconds (user + system, from the
# build's children) and the medians' ratios.
#
#   benchmarks/unity_build.sh [ROUNDS] [TARGET] [CMAKE_ARG...]
#   e.g. benchmarks/unity_build.sh 1 all        # the whole tree, once each
#        benchmarks/unity_build.sh 3 pelab_core # the core library, three times each
set -euo pipefail
rounds=${1:-1}
target=${2:-all}
shift $(($# < 2 ? $# : 2))
source_dir=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

/usr/bin/python3 - "$source_dir" "$out" "$rounds" "$target" "$@" <<'PY'
import os, resource, statistics, subprocess, sys, time
source, out, rounds, target, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
env = dict(os.environ, CCACHE_DISABLE="1")
folders = {}
for mode in ("OFF", "ON"):
    folders[mode] = os.path.join(out, f"unity-{mode}")
    subprocess.run(["cmake", "-S", source, "-B", folders[mode], "-DCMAKE_BUILD_TYPE=Release",
                    "-DCMAKE_CXX_COMPILER=clang++-14", f"-DPELAB_UNITY_BUILD={mode}", *extra],
                   check=True, env=env, stdout=subprocess.DEVNULL)

def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime

times = {mode: {"wall": [], "cpu": []} for mode in folders}
for round_ in range(rounds):
    for mode, folder in folders.items():
        subprocess.run(["cmake", "--build", folder, "--target", "clean"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        wall, cpu = time.perf_counter(), cpu_seconds()
        subprocess.run(["cmake", "--build", folder, "--target", target, "-j2"], check=True,
                       env=env, stdout=subprocess.DEVNULL)
        times[mode]["wall"].append(time.perf_counter() - wall)
        times[mode]["cpu"].append(cpu_seconds() - cpu)
        print(f"round {round_ + 1} unity {mode:3}: wall {times[mode]['wall'][-1]:7.1f} s, "
              f"cpu {times[mode]['cpu'][-1]:7.1f} s", flush=True)
for kind in ("wall", "cpu"):
    on, off = statistics.median(times["ON"][kind]), statistics.median(times["OFF"][kind])
    print(f"{target} {kind}: unity OFF {off:.1f} s, ON {on:.1f} s, ON/OFF {on / off:.2f}")
PY
