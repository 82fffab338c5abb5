#!/usr/bin/env python3
"""Data-parallel ranks against intra-op threads on one host, measured side by side.

For each workload manifest, rounds of two `pelab run`s that use the same cores two ways:
  threads: 1 rank  x N threads   (pelab run M --set train.threads=N)
  ranks:   N ranks x 1 thread    (pelab run M --nproc-per-node N --set train.threads=1)
alternating which goes first. Each run trains `--epochs` epochs; its summary.json gives the
training steps per second (evaluation excluded). Prints the median of each and their ratio.

  benchmarks/data_parallel_scaling.py --build build --rounds 3 --epochs 3 \
      benchmarks/workloads/paper.toml benchmarks/workloads/large.toml
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import tempfile


def steps_per_second(pelab, manifest, out, epochs, ranks, cores):
    command = [pelab, "run", manifest, "--out", out, "--quiet", "--no-report", "--force",
               "--set", f"train.epochs={epochs}", "--set", "train.eval_every=1000000"]
    if ranks > 1:
        command += ["--nproc-per-node", str(ranks), "--set", "train.threads=1"]
    else:
        command += ["--set", f"train.threads={cores}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    summaries = list(pathlib.Path(out).glob("*/*/seed-*/summary.json"))
    assert len(summaries) == 1, summaries
    summary = json.loads(summaries[0].read_text())
    assert summary["ranks"] == ranks, summary
    return summary["steps_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifests", nargs="+")
    parser.add_argument("--build", default="build")
    parser.add_argument("--cores", type=int, default=2, help="N: threads of the one rank, ranks")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    pelab = str(pathlib.Path(args.build, "bin", "pelab").resolve())
    print(f"| workload | 1 rank x {args.cores} threads, steps/s | {args.cores} ranks x 1 thread, "
          "steps/s | ranks / threads |")
    print("|---|---:|---:|---:|")
    for manifest in args.manifests:
        measured = {1: [], args.cores: []}
        with tempfile.TemporaryDirectory() as scratch:
            for round_ in range(args.rounds):
                order = [1, args.cores] if round_ % 2 == 0 else [args.cores, 1]
                for ranks in order:
                    measured[ranks].append(steps_per_second(
                        pelab, manifest, f"{scratch}/{ranks}", args.epochs, ranks, args.cores))
        threads = statistics.median(measured[1])
        ranks = statistics.median(measured[args.cores])
        rounds = ", ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(measured[1], measured[args.cores]))
        print(f"| {pathlib.Path(manifest).stem} | {threads:.3f} | {ranks:.3f} | "
              f"{ranks / threads:.2f}x |  <!-- rounds: {rounds} -->", flush=True)


if __name__ == "__main__":
    main()
