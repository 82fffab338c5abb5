#!/usr/bin/env python3
"""Train the quick protocols on the CPU and on a GPU with the same pelab, and compare the metrics.

For the day a machine with a GPU is lent: it needs a pelab built against a LibTorch with CUDA
(`make build-current-torch`, docs/building.md) and one visible GPU. Not part of the test suite or
of CI, which have no GPU. For each quick manifest (Latin Square, network simulation, brain) it runs
one seed for a few epochs twice, with train.device = "cpu" and "cuda", and compares every final
metric of every point of the sweep:

  - losses, MSEs and other continuous metrics: |gpu - cpu| <= rtol * |cpu| + atol;
  - accuracies (a fraction of hits): |gpu - cpu| <= accuracy_atol, since one flipped prediction
    moves them by 1/N.

fp32 on a GPU rounds differently (other reduction orders, fused kernels; cuBLAS is kept off TF32 by
LibTorch's default), so a few epochs agree closely while a full schedule may drift: keep --epochs
small for the tight check, or pass --epochs 0 (the manifests' own schedules) with a looser --rtol.

    python3 tests/gpu/cpu_vs_gpu.py --build build-current-torch --out /tmp/cpu-vs-gpu

Exit status 0 when every metric agrees, 1 when one does not, 2 when the check cannot run (no
pelab, no GPU). It prints one table row per compared metric and the wall time of each device.
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUICK_MANIFESTS = [
    "tasks/latin_square/experiments/quick.toml",
    "tasks/network_simulation/experiments/quick.toml",
    "tasks/brain/experiments/quick.toml",
]


def output_folder(manifest, device, args):
    """OUT/<task>/<device>: tasks/<task>/experiments/<name>.toml keeps its runs apart."""
    return args.out / pathlib.Path(manifest).parts[-3] / device


def run_pelab(pelab, manifest, device, args):
    """Trains every point of `manifest` on `device`; returns the wall time."""
    command = [str(pelab), "run", str(ROOT / manifest), "--out",
               str(output_folder(manifest, device, args)),
               "--set", f'train.device="{device}"', "--set", f"experiment.seeds=[{args.seed}]",
               "--no-report", "--quiet", "-j", "1"]
    if args.epochs > 0:
        command += ["--set", f"train.epochs={args.epochs}"]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"pelab run {manifest} on {device} failed (exit {result.returncode})")
    return time.perf_counter() - start


def summaries(folder):
    """{<experiment>/<point>/seed-<s>: summary} of every finished run under `folder`."""
    found = {}
    for path in sorted(folder.rglob("summary.json")):
        summary = json.loads(path.read_text())
        if summary.get("status") == "finished":
            found[str(path.parent.relative_to(folder))] = summary
    return found


def agrees(metric, cpu, gpu, args):
    if math.isnan(cpu) or math.isnan(gpu):
        return math.isnan(cpu) and math.isnan(gpu)
    if metric.endswith("accuracy"):
        return abs(gpu - cpu) <= args.accuracy_atol
    return abs(gpu - cpu) <= args.rtol * abs(cpu) + args.atol


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build-current-torch", type=pathlib.Path,
                        help="a pelab build against a LibTorch with CUDA")
    parser.add_argument("--out", default=pathlib.Path("/tmp/pelab-cpu-vs-gpu"), type=pathlib.Path)
    parser.add_argument("--epochs", type=int, default=3,
                        help="epochs per run (0: the manifests' own schedules)")
    parser.add_argument("--seed", type=int, default=2235)
    parser.add_argument("--rtol", type=float, default=2e-3)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--accuracy-atol", type=float, default=0.02)
    parser.add_argument("--manifest", action="append",
                        help="compare this manifest only (repeatable; default: the quick ones)")
    args = parser.parse_args()

    pelab = (args.build / "bin" / "pelab").resolve()
    if not os.access(pelab, os.X_OK):
        print(f"{pelab} not found: build it first (make build-current-torch)", file=sys.stderr)
        return 2
    probe = subprocess.run([str(pelab), "validate", str(ROOT / QUICK_MANIFESTS[1]), "--no-build",
                            "--set", 'train.device="cuda"'], cwd=ROOT, capture_output=True,
                           text=True)
    if probe.returncode != 0:
        print("this pelab cannot train on a GPU here:\n" + probe.stdout + probe.stderr,
              file=sys.stderr)
        return 2

    failures = 0
    print("| manifest | run | metric | cpu | gpu | relative difference | agrees |")
    print("|---|---|---|---:|---:|---:|---|")
    for manifest in args.manifest or QUICK_MANIFESTS:
        seconds = {device: run_pelab(pelab, manifest, device, args) for device in ("cpu", "cuda")}
        cpu_runs = summaries(output_folder(manifest, "cpu", args))
        gpu_runs = summaries(output_folder(manifest, "cuda", args))
        for run, cpu in cpu_runs.items():
            gpu = gpu_runs.get(run)
            if gpu is None:
                print(f"| {manifest} | {run} | (missing on the GPU) | | | | no |")
                failures += 1
                continue
            for metric, cpu_value in sorted(cpu["final"].items()):
                gpu_value = gpu["final"].get(metric, float("nan"))
                ok = agrees(metric, cpu_value, gpu_value, args)
                failures += not ok
                relative = abs(gpu_value - cpu_value) / max(abs(cpu_value), 1e-12)
                print(f"| {manifest} | {run} | {metric} | {cpu_value:.6g} | {gpu_value:.6g} | "
                      f"{relative:.2e} | {'yes' if ok else 'NO'} |")
        print(f"({manifest}: cpu {seconds['cpu']:.1f} s, cuda {seconds['cuda']:.1f} s)")
    print(f"{failures} metric(s) disagree" if failures else "every metric agrees")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
