"""pelab's training step beside PyTorch eager's and beside the machine's matrix throughput, in one
run, on the same machine and thread counts.

For each thread count and each of --rounds rounds it times, one after the other:
  (a) pelab: `pelab_training_benchmark --benchmark_filter=BM_TrainStep/<workload>` (steps/s);
  (b) the same architecture in PyTorch eager (pytorch_reference.py), same batch shape, AdamW;
  (c) the matrix throughput: every GEMM of one training step (shapes from
      `pelab_training_benchmark --gemms=<workload>`) timed with torch.mm / torch.bmm.
and prints the medians: steps/s of (a) and (b), their ratio, and pelab's useful FLOPs per second
(GEMM FLOPs of forward + backward, no recomputation) as a fraction of (c). Interleaving the rounds
keeps the three comparable on a noisy, shared machine.

    /usr/bin/python3 benchmarks/speed_vs_pytorch.py --build build --threads 1 2
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_reference import Model  # noqa: E402


def pelab_steps_per_second(benchmark, workload, threads, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    output = subprocess.run(
        [benchmark, f"--threads={threads}", f"--benchmark_filter=BM_TrainStep/{workload}/",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True, env=env).stdout
    runs = json.loads(output)["benchmarks"]
    if not runs:
        raise SystemExit(f"pelab_training_benchmark ran no benchmark for workload '{workload}'")
    return runs[0]["steps_per_s"]


def eager_steps_per_second(model, optimizer, inputs, targets, steps):
    def step():
        optimizer.zero_grad()
        loss = F.nll_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()

    step()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - start)


def matrix_throughput(gemms, repeats):
    """GFLOP/s of torch.mm/bmm over the step's GEMMs, each timed as the step performs it."""
    operands = []
    for gemm in gemms:
        shape_a = (gemm["m"], gemm["k"])
        shape_b = (gemm["k"], gemm["n"])
        if gemm["batch"] > 1:
            shape_a, shape_b = (gemm["batch"],) + shape_a, (gemm["batch"],) + shape_b
        operands.append((torch.randn(shape_a), torch.randn(shape_b), gemm["repeat"]))
    for a, b, _ in operands:  # warm-up
        torch.matmul(a, b)
    flops = sum(2.0 * g["m"] * g["k"] * g["n"] * g["batch"] * g["repeat"] for g in gemms)
    start = time.perf_counter()
    for _ in range(repeats):
        for a, b, repeat in operands:
            for _ in range(repeat):
                torch.matmul(a, b)
    return repeats * flops / (time.perf_counter() - start) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="pelab's build folder")
    parser.add_argument("--workload", default="paper", help="benchmarks/workloads/<name>.toml")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="eager steps per round")
    parser.add_argument("--min-time", default="3", help="pelab's benchmark_min_time per round (s)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    benchmark = os.path.join(args.build, "bin", "pelab_training_benchmark")
    if not os.access(benchmark, os.X_OK):
        raise SystemExit(f"{benchmark} not found: build pelab first (cmake --build {args.build})")
    workload = json.loads(subprocess.run([benchmark, f"--gemms={args.workload}"], check=True,
                                         capture_output=True, text=True).stdout)
    flops = workload["flops_per_step"]
    print(f"workload {args.workload}: {workload['layers']} blocks, d_model {workload['d_model']}, "
          f"{workload['heads']} heads, {workload['tokens']} tokens, batch {workload['batch']}; "
          f"{flops / 1e9:.2f} GFLOP per step in {len(workload['gemms'])} GEMM shapes")
    print(f"torch {torch.__version__}, BLAS: {blas_library()}")

    results = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        model = Model(workload["input_size"], workload["num_classes"], workload["layers"],
                      workload["d_model"], workload["heads"], workload["tokens"])
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        inputs = torch.randn(workload["batch"], workload["tokens"], workload["input_size"])
        targets = torch.randint(0, workload["num_classes"], (workload["batch"],))
        pelab, eager, matrix = [], [], []
        for round_index in range(args.rounds):
            pelab.append(pelab_steps_per_second(benchmark, args.workload, threads, args.min_time))
            eager.append(eager_steps_per_second(model, optimizer, inputs, targets, args.steps))
            matrix.append(matrix_throughput(workload["gemms"], repeats=3))
            print(f"  threads {threads} round {round_index + 1}: pelab {pelab[-1]:.3f} steps/s, "
                  f"pytorch {eager[-1]:.3f} steps/s, matrix {matrix[-1]:.1f} GFLOP/s", flush=True)
        row = {
            "threads": threads,
            "pelab_steps_per_s": statistics.median(pelab),
            "pytorch_steps_per_s": statistics.median(eager),
            "ratio": statistics.median(p / e for p, e in zip(pelab, eager)),
            "matrix_gflop_per_s": statistics.median(matrix),
            "pelab_gflop_per_s": statistics.median(pelab) * flops / 1e9,
        }
        row["fraction_of_matrix"] = statistics.median(
            p * flops / 1e9 / m for p, m in zip(pelab, matrix))
        results.append(row)

    print()
    print(f"| threads | pelab steps/s | PyTorch eager steps/s | pelab / PyTorch | "
          f"matrix GFLOP/s | pelab GFLOP/s | fraction of matrix |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['threads']} | {r['pelab_steps_per_s']:.3f} | {r['pytorch_steps_per_s']:.3f} "
              f"| {r['ratio']:.2f}x | {r['matrix_gflop_per_s']:.1f} | "
              f"{r['pelab_gflop_per_s']:.1f} | {100 * r['fraction_of_matrix']:.0f}% |")
    print(f"(medians of {args.rounds} interleaved rounds; ratios are medians of per-round ratios)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": workload, "results": results}, f, indent=2)
    return 0


def blas_library():
    """The BLAS this process actually loaded (Debian's libblas.so.3 is an alternatives link)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line.lower() and "/" in line}
    return ", ".join(sorted(paths)) or "none loaded yet"


if __name__ == "__main__":
    sys.exit(main())
