"""pelab's training step beside what a user would pick instead, in one run, same machine, same
thread counts, same workloads.

Five contenders, each skipped (and said so) when it is not there:
  pelab 1.13      pelab_training_benchmark of --build (Debian's LibTorch 1.13)
  pelab current   pelab_training_benchmark of --current-build (`make build-current-torch`)
  PyTorch 1.13    the same architecture in PyTorch eager (pytorch_reference.py), --python
  PyTorch current the same in the current PyTorch, eager, --current-python
  compile         the same in the current PyTorch under torch.compile (inductor, CPU): the
                  fastest of the variants a user would try, named in the table:
                    model     torch.compile(model), the default mode
                    step      the model and AdamW's step compiled (the whole training step)
                    autotune  torch.compile(model, mode="max-autotune-no-cudagraphs")

Inductor's vector kernels: its CPU backend checks which vector ISA it may use by building and
loading a probe library that calls libtorch_cpu's Sleef functions; the library is not linked with
libtorch, so the probe loads only where libtorch's symbols are global. A wheel imported the usual
way (RTLD_LOCAL) fails it (`undefined symbol: Sleef_expf16_u10`), inductor picks INVALID_VEC_ISA
and compiles scalar C++: not what torch.compile is. The compile workers therefore import torch
with TORCH_USE_RTLD_GLOBAL=1 (torch's own switch for loading libtorch with RTLD_GLOBAL), print
the ISA inductor picked, and a compile variant measured with INVALID_VEC_ISA is left out of the
table, saying why, unless --allow-scalar-compile.

For each workload (benchmarks/workloads/), precision (fp32; bf16: the forward pass under bfloat16
autocast in all five) and thread count, it interleaves --rounds rounds of the five, so that the
machine's noise falls on all of them alike, and prints the medians of steps/s and the median of the
per-round ratios. Each PyTorch contender is one long-lived worker process (this script, run by that
Python with --worker), which builds its model once (torch.compile compiles once) and answers "time N
steps" requests. Each PyTorch worker also times the step's GEMMs alone (shapes from
`pelab_training_benchmark --gemms=<workload>`) with torch.matmul: the matrix throughput that pelab's
useful FLOPs are compared with.

    /usr/bin/python3 benchmarks/speed_vs_pytorch.py --build build \\
        --current-build build-current-torch --workloads paper quick large --threads 1 2

On a GPU (--device cuda): the same table with the current contenders only (Debian's LibTorch and
PyTorch 1.13 have no CUDA); every step and GEMM timing waits for the device (a loss read back, or
torch.cuda.synchronize), torch.compile generates Triton kernels (no vector ISA to check), and
--threads is the host threads that launch the kernels:

    python3 benchmarks/speed_vs_pytorch.py --device cuda --current-build build-t211 \\
        --current-python python3 --workloads paper quick large --threads 1
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CONTENDERS = ["pelab 1.13", "pelab current", "PyTorch 1.13", "PyTorch current", "compile"]
COMPILE_VARIANTS = {"model": "compile", "step": "compile-step", "autotune": "compile-autotune"}


# --- the worker: one PyTorch contender, run by its own Python ---------------------------------------

def worker(args):
    import torch
    import torch.nn.functional as F
    sys.path.insert(0, HERE)
    from pytorch_reference import Model

    workload = json.loads(open(args.gemms_json).read())
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = Model(workload["input_size"], workload["num_classes"], workload["layers"],
                  workload["d_model"], workload["heads"], workload["tokens"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs = torch.randn(workload["batch"], workload["tokens"], workload["input_size"],
                         device=device)
    targets = torch.randint(0, workload["num_classes"], (workload["batch"],), device=device)

    def wait():  # a GPU runs asynchronously: a timing ends when its work has
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    if args.worker.startswith("compile") and args.kernel_profile:
        import torch._inductor.config
        torch._inductor.config.cpp.enable_kernel_profile = True  # each fused kernel in a trace
    if args.worker == "compile-autotune":
        forward = torch.compile(model, mode="max-autotune-no-cudagraphs")
    elif args.worker.startswith("compile"):
        forward = torch.compile(model)
    else:
        forward = model
    optimizer_step = optimizer.step
    if args.worker == "compile-step":
        # The recipe of PyTorch's "Compiling the optimizer" tutorial: one fused graph for AdamW.
        optimizer_step = torch.compile(optimizer.step, fullgraph=False)
    bf16 = args.precision == "bf16"

    def step():
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            output = forward(inputs)
        loss = F.nll_loss(output.float(), targets)
        loss.backward()
        optimizer_step()

    start = time.perf_counter()
    for _ in range(3):  # warm-up; torch.compile compiles here
        step()
    wait()
    warm_up = time.perf_counter() - start
    dtype = torch.bfloat16 if bf16 else torch.float32
    operands = []
    for gemm in workload["gemms"]:
        shape_a, shape_b = (gemm["m"], gemm["k"]), (gemm["k"], gemm["n"])
        if gemm["batch"] > 1:
            shape_a, shape_b = (gemm["batch"],) + shape_a, (gemm["batch"],) + shape_b
        operands.append((torch.randn(shape_a, dtype=dtype, device=device),
                         torch.randn(shape_b, dtype=dtype, device=device), gemm["repeat"]))
    vec_isa = None
    if args.worker.startswith("compile") and device.type == "cpu":
        from torch._inductor import cpu_vec_isa
        vec_isa = str(cpu_vec_isa.pick_vec_isa()) or "INVALID_VEC_ISA"
    print(json.dumps({"torch": torch.__version__, "blas": blas_library(device), "warm_up_s": warm_up,
                      "vec_isa": vec_isa}), flush=True)
    for line in sys.stdin:
        what, count, *path = line.split()
        count = int(count)
        start = time.perf_counter()
        if what == "profile":  # a Chrome trace of `count` steps, as pelab's --profile writes
            from torch.profiler import profile, ProfilerActivity
            activities = [ProfilerActivity.CPU] + (
                [ProfilerActivity.CUDA] if device.type == "cuda" else [])
            with profile(activities=activities) as recording:
                for _ in range(count):
                    step()
                wait()
            recording.export_chrome_trace(path[0])
            rate = 0.0
        elif what == "steps":
            for _ in range(count):
                step()
            wait()
            rate = count / (time.perf_counter() - start)
        else:  # "matrix": GFLOP/s of the step's GEMMs, each as often as the step performs it
            for _ in range(count):
                for a, b, repeat in operands:
                    for _ in range(repeat):
                        torch.matmul(a, b)
            wait()
            rate = count * workload["flops_per_step"] / (time.perf_counter() - start) / 1e9
        print(rate, flush=True)
    return 0


def blas_library(device):
    """The BLAS this torch computes with: the GPU's cuBLAS, MKL where it is linked into
    libtorch_cpu (the wheels), else the OpenBLAS this process loaded (Debian's libblas.so.3 is an
    alternatives link)."""
    import torch
    if device.type == "cuda":
        return f"cuBLAS on {torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    if torch.backends.mkl.is_available():
        return "Intel MKL, linked into libtorch_cpu"
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    return ", ".join(sorted(paths)) or "none found"


class Worker:
    """A running worker process: one PyTorch contender for one workload, precision and thread
    count."""

    def __init__(self, python, mode, gemms_json, threads, precision, device, openblas_kernel=None,
                 rtld_global=None, kernel_profile=False):
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        if openblas_kernel:
            env["OPENBLAS_CORETYPE"] = openblas_kernel
        if rtld_global is not None:
            if rtld_global:
                env["TORCH_USE_RTLD_GLOBAL"] = "1"  # inductor's vector ISA probe (docstring)
            # Inductor caches the probe's verdict: one cache a loading mode, or a verdict from
            # one would be applied to kernels loaded by the other.
            env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
                os.path.dirname(gemms_json),
                "inductor-rtld-" + ("global" if rtld_global else "local"))
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker", mode, "--gemms-json", gemms_json,
             "--threads", str(threads), "--precision", precision, "--device", device] +
            (["--kernel-profile"] if kernel_profile else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {mode} worker of {python} exited before it was ready (its "
                             "error is above)")
        self.info = json.loads(line)

    def time(self, what, count, path=""):
        self.process.stdin.write(f"{what} {count} {path}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


# --- the orchestrator --------------------------------------------------------------------------------

def pelab_benchmark(benchmark, workload, threads, min_time, device="cpu"):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    done = subprocess.run(
        [benchmark, f"--threads={threads}", f"--device={device}",
         f"--benchmark_filter=BM_TrainStep/{workload}/",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        capture_output=True, text=True, env=env)
    if done.returncode != 0:  # its own error line says what is wrong (e.g. no GPU)
        errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
        raise SystemExit(f"{benchmark} failed (exit {done.returncode}): " +
                         (errors[-1] if errors else done.stderr.strip()[-500:]))
    return json.loads(done.stdout)


def pelab_steps_per_second(benchmark, workload, threads, min_time, device):
    runs = pelab_benchmark(benchmark, workload, threads, min_time, device)["benchmarks"]
    if not runs:
        raise SystemExit(f"{benchmark} ran no benchmark for workload '{workload}'")
    return runs[0]["steps_per_s"]


def find_contenders(args):
    """{contender: how to run it}, and a line for each one that is missing."""
    found, missing = {}, []
    for name, build in (("pelab 1.13", args.build), ("pelab current", args.current_build)):
        if name.endswith("1.13") and args.device != "cpu":
            missing.append(f"{name}: Debian's LibTorch 1.13 has no CUDA")
            continue
        benchmark = os.path.join(build, "bin", "pelab_training_benchmark") if build else None
        if benchmark and os.access(benchmark, os.X_OK):
            found[name] = benchmark
        else:
            missing.append(f"{name}: no {benchmark or 'build given'}")
    for name, python in (("PyTorch 1.13", args.python), ("PyTorch current", args.current_python)):
        if name.endswith("1.13") and args.device != "cpu":
            missing.append(f"{name}: Debian's PyTorch 1.13 has no CUDA")
            continue
        if python and os.access(python, os.X_OK):
            found[name] = python
        else:
            missing.append(f"{name}: no {python or 'python given'}")
    if "PyTorch current" in found and not args.no_compile:
        found["compile"] = found["PyTorch current"]
    return found, missing


def measure(args, contenders, workload_name, precision, threads):
    pelab_workload = workload_name + ("_bf16" if precision == "bf16" else "")
    gemm_source = contenders.get("pelab 1.13") or contenders.get("pelab current")
    workload = json.loads(subprocess.run([gemm_source, f"--gemms={pelab_workload}"], check=True,
                                         capture_output=True, text=True).stdout)
    gemms_json = os.path.join(args.scratch, f"{pelab_workload}.json")
    with open(gemms_json, "w") as f:
        json.dump(workload, f)
    workers = {}
    for name, mode in (("PyTorch 1.13", "eager"), ("PyTorch current", "eager")):
        if name in contenders:
            kernel = args.openblas_kernel if name == "PyTorch 1.13" else None
            workers[name] = Worker(contenders[name], mode, gemms_json, threads, precision,
                                   args.device, kernel)
    if "compile" in contenders:
        for variant in args.compile_variants:
            workers[f"compile {variant}"] = Worker(
                contenders["compile"], COMPILE_VARIANTS[variant], gemms_json, threads, precision,
                args.device, rtld_global=not args.compile_rtld_local,
                kernel_profile=bool(args.profile_dir))
    steps = {name: [] for name in contenders if name != "compile"}
    steps.update({name: [] for name in workers})
    matrix = {name: [] for name in workers if not name.startswith("compile")}
    try:
        for round_index in range(args.rounds):
            for name in ("pelab 1.13", "pelab current"):
                if name in contenders:
                    steps[name].append(pelab_steps_per_second(contenders[name], pelab_workload,
                                                              threads, args.min_time, args.device))
            for name, w in workers.items():
                # As many steps as about --min-time seconds, from the last round's rate.
                pelab_rate = next((steps[p][-1] for p in ("pelab 1.13", "pelab current")
                                   if steps.get(p)), 1.0)
                rate = steps[name][-1] if steps[name] else pelab_rate
                steps[name].append(w.time("steps", max(2, round(rate * float(args.min_time)))))
                if name in matrix:
                    matrix[name].append(w.time("matrix", 3))
            print(f"  {pelab_workload} threads {threads} round {round_index + 1}: " + ", ".join(
                f"{name} {values[-1]:.3f}" for name, values in steps.items()) + " steps/s",
                flush=True)
        if args.profile_dir:
            write_profiles(args, contenders, workers, pelab_workload, threads)
    finally:
        for w in workers.values():
            w.close()
    # The compile column: the fastest variant whose kernels are vectorised (or any, if asked).
    compile_notes = {}
    eligible = []
    for name, w in workers.items():
        if not name.startswith("compile"):
            continue
        isa = w.info.get("vec_isa") or "INVALID_VEC_ISA"
        if args.device == "cpu" and isa == "INVALID_VEC_ISA" and not args.allow_scalar_compile:
            compile_notes[name] = ("left out: inductor picked INVALID_VEC_ISA (scalar C++ kernels, "
                                   "not torch.compile as a user gets it; see --help)")
        else:
            eligible.append(name)
    fastest = max(eligible, key=lambda n: statistics.median(steps[n]), default=None)
    if fastest:
        steps["compile"] = steps[fastest]
    row = {"workload": workload_name, "precision": precision, "threads": threads,
           "device": args.device,
           "pytorch_1_13_openblas_kernel": args.openblas_kernel or "OpenBLAS's own choice",
           "flops_per_step": workload["flops_per_step"],
           "torch": {name: w.info for name, w in workers.items()},
           "compile_variant": fastest, "compile_notes": compile_notes}
    row["steps_per_s"] = {name: statistics.median(v) for name, v in steps.items()}
    row["matrix_gflop_per_s"] = {name: statistics.median(v) for name, v in matrix.items()}

    def ratio(a, b):
        if a in steps and b in steps:
            return statistics.median(x / y for x, y in zip(steps[a], steps[b]))
        return None

    row["ratios"] = {"pelab 1.13 / PyTorch 1.13": ratio("pelab 1.13", "PyTorch 1.13"),
                     "pelab current / PyTorch current": ratio("pelab current", "PyTorch current"),
                     "pelab current / compile": ratio("pelab current", "compile"),
                     "pelab 1.13 / compile": ratio("pelab 1.13", "compile"),
                     "pelab current / pelab 1.13": ratio("pelab current", "pelab 1.13")}
    for pelab, torch_name in (("pelab 1.13", "PyTorch 1.13"), ("pelab current", "PyTorch current")):
        if pelab in steps and torch_name in matrix:
            row.setdefault("fraction_of_matrix", {})[pelab] = statistics.median(
                s * workload["flops_per_step"] / 1e9 / m
                for s, m in zip(steps[pelab], matrix[torch_name]))
    return row


def write_profiles(args, contenders, workers, pelab_workload, threads):
    """A Chrome trace of 5 steps of every contender, <profile-dir>/<workload>-t<threads>-<name>.json
    (benchmarks/profile_summary.py reads each)."""
    os.makedirs(args.profile_dir, exist_ok=True)

    def path_of(name):
        return os.path.abspath(os.path.join(
            args.profile_dir, f"{pelab_workload}-t{threads}-{name.replace(' ', '-')}.json"))

    for name in ("pelab 1.13", "pelab current"):
        if name in contenders:
            subprocess.run([contenders[name], f"--threads={threads}", f"--device={args.device}",
                            f"--profile={pelab_workload}:{path_of(name)}"], check=True,
                           capture_output=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    for name, w in workers.items():
        w.time("profile", 5, path_of(name))
    print(f"  profiles: {args.profile_dir}/{pelab_workload}-t{threads}-*.json", flush=True)


def cell(value, form):
    return "-" if value is None else form.format(value)


def print_tables(rows):
    print()
    print("| workload | precision | threads | " + " | ".join(CONTENDERS) + " | compile variant |")
    print("|---|---|---:|" + "---:|" * len(CONTENDERS) + "---|")
    for r in rows:
        print(f"| {r['workload']} | {r['precision']} | {r['threads']} | " + " | ".join(
            cell(r["steps_per_s"].get(name), "{:.3f}") for name in CONTENDERS) +
            f" | {r['compile_variant'] or '-'} |")
    print("(steps/s, medians of the interleaved rounds; compile: the fastest variant with "
          "vectorised kernels)")
    variants = [f"compile {v}" for v in COMPILE_VARIANTS]
    if any(v in r["steps_per_s"] for r in rows for v in variants):
        print()
        print("| workload | precision | threads | " + " | ".join(variants) + " |")
        print("|---|---|---:|" + "---:|" * len(variants))
        for r in rows:
            print(f"| {r['workload']} | {r['precision']} | {r['threads']} | " + " | ".join(
                cell(r["steps_per_s"].get(v), "{:.3f}") for v in variants) + " |")
        print("(steps/s of each torch.compile variant, medians)")
    names = list(rows[0]["ratios"]) if rows else []
    print()
    print("| workload | precision | threads | " + " | ".join(names) +
          " | pelab 1.13, fraction of matrix | pelab current, fraction of matrix |")
    print("|---|---|---:|" + "---:|" * (len(names) + 2))
    for r in rows:
        fractions = r.get("fraction_of_matrix", {})
        print(f"| {r['workload']} | {r['precision']} | {r['threads']} | " + " | ".join(
            cell(r["ratios"][n], "{:.2f}x") for n in names) + " | " +
            cell(fractions.get("pelab 1.13"), "{:.0%}") + " | " +
            cell(fractions.get("pelab current"), "{:.0%}") + " |")
    print("(medians of the per-round ratios; fraction of matrix: pelab's useful GEMM FLOP/s over "
          "its own LibTorch's torch.matmul on the step's GEMMs, in the row's precision)")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", choices=["eager"] + list(COMPILE_VARIANTS.values()),
                        help=argparse.SUPPRESS)
    parser.add_argument("--gemms-json", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cpu",
                        help="train on cpu (default), cuda or cuda:N: on a GPU the current "
                             "contenders only, with a CUDA build of pelab (docs/performance.md)")
    parser.add_argument("--build", default="build", help="pelab on Debian's LibTorch 1.13")
    parser.add_argument("--current-build", default="build-current-torch",
                        help="pelab on the current LibTorch (make build-current-torch)")
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="a Python with PyTorch 1.13 (Debian's python3-torch)")
    parser.add_argument("--current-python", default=None,
                        help="a Python with the current PyTorch (default: the venv of "
                             "--current-build)")
    parser.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    parser.add_argument("--compile-variants", nargs="+", default=list(COMPILE_VARIANTS),
                        choices=list(COMPILE_VARIANTS),
                        help="the torch.compile variants to run (the compile column is the "
                             "fastest): model, step, autotune")
    parser.add_argument("--compile-rtld-local", action="store_true",
                        help="import torch in the compile workers as a plain `import torch` does "
                             "(RTLD_LOCAL): on hosts where inductor's vector ISA probe then fails, "
                             "shows the scalar kernels")
    parser.add_argument("--allow-scalar-compile", action="store_true",
                        help="keep a compile variant whose inductor picked INVALID_VEC_ISA (scalar "
                             "kernels) in the table")
    parser.add_argument("--python-blas-kernel", choices=["pelab", "as-is"], default="pelab",
                        help="PyTorch 1.13's OpenBLAS kernel: the one pelab 1.13 uses (where "
                             "OpenBLAS falls back to a generic kernel, pelab chooses a better one "
                             "and PyTorch would not; default), or OpenBLAS's own choice")
    parser.add_argument("--workloads", nargs="+", default=["paper"],
                        help="benchmarks/workloads/<name>.toml: paper, quick, large")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"],
                        choices=["fp32", "bf16"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-time", default="2", help="seconds each contender runs per round")
    parser.add_argument("--scratch", default="/tmp", help="where the workloads' GEMM lists go")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--profile-dir",
                        help="after the rounds, write a Chrome trace of 5 steps of every "
                             "contender here (inductor's kernels named: enable_kernel_profile)")
    parser.add_argument("--kernel-profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.threads = args.threads[0]
        return worker(args)
    if args.current_python is None and args.current_build:
        args.current_python = os.path.join(args.current_build, "venv", "bin", "python")

    contenders, missing = find_contenders(args)
    if not any(name.startswith("pelab") for name in contenders):
        if args.device != "cpu":
            raise SystemExit(f"--device {args.device}: no pelab built against a CUDA LibTorch "
                             "found; give it with --current-build (docs/performance.md, Training "
                             "on a GPU)")
        raise SystemExit("no pelab build found: build pelab first (make build)")
    for line in missing:
        print(f"not measured: {line}")
    if args.device != "cpu":  # pelab's own check of the device, before any worker starts
        pelab = contenders.get("pelab current") or contenders.get("pelab 1.13")
        pelab_benchmark(pelab, "quick", 1, "0.01", args.device)
    args.openblas_kernel = None
    if args.python_blas_kernel == "pelab" and "pelab 1.13" in contenders:
        host = pelab_benchmark(contenders["pelab 1.13"], "quick", 1, "0.01")["context"]
        kernel = re.search(r"kernel (\w+)", host.get("pelab_host", ""))
        args.openblas_kernel = kernel.group(1) if kernel else None
        print(f"pelab 1.13: {host.get('pelab_host')}")
        print(f"PyTorch 1.13 runs with OPENBLAS_CORETYPE={args.openblas_kernel}, pelab's kernel")
    rows = []
    for workload in args.workloads:
        for precision in args.precisions:
            for threads in args.threads:
                rows.append(measure(args, contenders, workload, precision, threads))
                if args.json:  # after every row: a failure later keeps what was measured
                    with open(args.json, "w") as f:
                        json.dump(rows, f, indent=2)
    for name, info in rows[0]["torch"].items():
        isa = f", inductor vector ISA {info['vec_isa']}" if info.get("vec_isa") else ""
        print(f"{name}: torch {info['torch']}, BLAS {info['blas']}{isa}, device {args.device}")
    for r in rows:
        for name, note in r["compile_notes"].items():
            print(f"{r['workload']} {r['precision']} threads {r['threads']}: {name} {note}")
    print_tables(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
