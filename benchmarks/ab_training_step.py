"""Two builds of pelab's training step side by side: a change's speed, measured in one run.

Runs pelab_training_benchmark of build A and of build B in turn, --rounds times, on the same
workloads and thread count, so that the machine's noise falls on both alike, and prints per
workload the median steps/s of each and the median of the per-round ratios B / A.

    cp -r build/bin build/lib build/share /tmp/before      # before the change
    # ... change, rebuild ...
    python3 benchmarks/ab_training_step.py /tmp/before build --workloads paper paper_bf16 quick
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def steps_per_second(build, workloads, threads, min_time):
    binary = os.path.join(build, "bin", "pelab_training_benchmark")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    lib = os.path.join(build, "lib")
    if os.path.isdir(lib):  # a copied build finds its own libraries first
        env["LD_LIBRARY_PATH"] = lib + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    pattern = "|".join(workloads)
    done = subprocess.run(
        [binary, f"--threads={threads}", f"--benchmark_filter=BM_TrainStep/({pattern})/",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{binary} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    rates = {}
    for run in json.loads(done.stdout)["benchmarks"]:
        rates[run["name"].split("/")[1]] = run["steps_per_s"]
    missing = [w for w in workloads if w not in rates]
    if missing:
        sys.exit(f"{binary} ran no benchmark for {', '.join(missing)}")
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="build folder A (the baseline)")
    parser.add_argument("b", help="build folder B (the change)")
    parser.add_argument("--workloads", nargs="+", default=["paper", "quick"],
                        help="benchmarks/workloads/<name>: paper, paper_bf16, quick, ...")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", default="1", help="seconds per benchmark and round")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    a, b = [], []
    for round_index in range(args.rounds):
        a.append(steps_per_second(args.a, args.workloads, args.threads, args.min_time))
        b.append(steps_per_second(args.b, args.workloads, args.threads, args.min_time))
        print(f"round {round_index + 1}: " + ", ".join(
            f"{w} {a[-1][w]:.2f} / {b[-1][w]:.2f}" for w in args.workloads), flush=True)
    print(f"\n| workload | A steps/s | B steps/s | B / A (median of {args.rounds} rounds; range) |")
    print("|---|---:|---:|---:|")
    for w in args.workloads:
        ratios = [y[w] / x[w] for x, y in zip(a, b)]
        print(f"| {w} | {statistics.median(x[w] for x in a):.3f} | "
              f"{statistics.median(y[w] for y in b):.3f} | {statistics.median(ratios):.3f}x "
              f"({min(ratios):.3f}-{max(ratios):.3f}) |")
    print(f"(threads {args.threads}; A = {args.a}, B = {args.b})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
