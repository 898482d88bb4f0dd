"""Each kernel in benchmarks/foreign_kernels/ against its upstream task, unchanged: one table of time and roofline.

    python benchmarks/foreign.py --gpumode REFERENCE_KERNELS/problems/pmpp_v2 \\
        --kernelbench KERNELBENCH/KernelBench/level1 [TASK ...]

Six GPU MODE pmpp_v2 tasks and four KernelBench level-1 files, each evaluated by evolve's harness (evolve eval) on
the GPU. One row per benchmark case: task, case, the kernel's time (ms), its fraction of the roofline, and its
speed-up over the eager reference (GPU MODE's ref_kernel, KernelBench's Model.forward); the task's fitness (geomean
fraction of roofline) stands on its first row, and a task that fails prints the failing rung and reason instead.
Each rung's outcome is said on stderr as it is decided, with the seconds since its task began.
TASK names (the kernel files' stems, e.g. gpumode_matmul) pick some; without them every task runs.
Exit status 1 if any task failed.
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path

from evolve.harness import EvalOptions, evaluate

KERNELS = Path(__file__).resolve().parent / "foreign_kernels"
# kernel file stem -> (upstream suite, task folder or file inside it)
TASKS = {
    "gpumode_vectoradd": ("gpumode", "vectoradd_py"),
    "gpumode_grayscale": ("gpumode", "grayscale_py"),
    "gpumode_prefixsum": ("gpumode", "prefixsum_py"),
    "gpumode_histogram": ("gpumode", "histogram_py"),
    "gpumode_matmul": ("gpumode", "matmul_py"),
    "gpumode_conv2d": ("gpumode", "conv2d_py"),
    "kernelbench_softmax": ("kernelbench", "23_Softmax.py"),
    "kernelbench_rmsnorm": ("kernelbench", "36_RMSNorm_.py"),
    "kernelbench_matmul": ("kernelbench", "1_Square_matrix_multiplication_.py"),
    "kernelbench_cross_entropy": ("kernelbench", "95_CrossEntropyLoss.py"),
}
HEADER = f"{'task':<27}{'case':<44}{'ms':>10}{'roofline':>10}{'vs eager':>10}{'fitness':>9}{'secs':>6}  failure"


def fmt(value, spec=".3f") -> str:
    return "-" if value is None else format(value, spec)


def rows(name: str, verdict, seconds: float, width: int) -> list[str]:
    """The task's lines of the table: one per timed case, or one carrying the failure."""
    failure = verdict.failure
    why = f"{failure.name}: {' '.join((failure.reason or '').split())}" if failure else ""
    if len(why) > width:
        why = why[: width - 3] + "..."
    lines = []
    for i, shape in enumerate(verdict.shapes or [{}]):
        first = i == 0
        fitness, secs = (fmt(verdict.fitness, ".4f"), f"{seconds:.0f}") if first else ("", "")
        lines.append(f"{name:<27}{str(shape.get('case', '-')):<44}{fmt(shape.get('ms')):>10}"
                     f"{fmt(shape.get('roofline_fraction')):>10}{fmt(shape.get('speedup_vs_torch'), '.2f'):>10}"
                     f"{fitness:>9}{secs:>6}  {why if first else ''}".rstrip())
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpumode", type=Path, required=True, help="a reference-kernels checkout's problems/pmpp_v2")
    parser.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout's KernelBench/level1")
    parser.add_argument("--device", default="cuda", choices=["cuda", "auto"],
                        help="cuda (default), or auto: the GPU where there is one, else the Triton interpreter")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds for one task's evaluation")
    parser.add_argument("--max-memory", type=float, default=64.0,
                        help="host memory limit of the runner in GB (KernelBench's inputs are 4-8 GB)")
    parser.add_argument("--cache", help="peaks/baselines cache folder (default: a fresh temporary one)")
    parser.add_argument("--width", type=int, default=100, help="failure column width")
    parser.add_argument("tasks", nargs="*", help=f"kernel stems (default: all): {', '.join(TASKS)}")
    args = parser.parse_args()
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(TASKS)}")
    names = args.tasks or list(TASKS)
    folders = {"gpumode": args.gpumode, "kernelbench": args.kernelbench}
    cache = args.cache or tempfile.mkdtemp(prefix="evolve-foreign-")
    options = EvalOptions(device=args.device, timeout_s=args.timeout, max_rss_gb=args.max_memory, cache_dir=cache)
    failed, reasons = 0, []
    for i, name in enumerate(names):
        suite, task = TASKS[name]
        started = time.perf_counter()
        print(f"{name}: evaluating {folders[suite] / task}", file=sys.stderr, flush=True)
        verdict = evaluate(KERNELS / f"{name}.py", folders[suite] / task, options,
                           on_rung=lambda rung, name=name, began=started: print(
                               f"{name}: {rung.name} {rung.status} after {time.perf_counter() - began:.1f} s",
                               file=sys.stderr, flush=True))
        if i == 0:
            print(f"device: {verdict.device}  mode: {verdict.mode}")
            print(HEADER)
        print("\n".join(rows(name, verdict, time.perf_counter() - started, args.width)), flush=True)
        failed += not verdict.ok
        if verdict.failure:
            reasons.append(f"{name}: {verdict.failure.name}: {' '.join((verdict.failure.reason or '').split())}")
    print(f"{len(names) - failed} of {len(names)} tasks passed")
    for line in reasons:  # whole, where the table cut them
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
