"""Does giving every timed repetition new inputs (and computing its reference just before) change the timed figure?
Prints a table; needs a CUDA GPU.

    python benchmarks/feed_timing.py

Times torch.softmax with the harness's GPU timer on the softmax problem's benchmark shapes, its inputs coming from:
fixed (two input sets copied afresh each repetition, as for the harness's baselines), feed (new values each
repetition from the problem's generator, reference computed in float64 before the call), feed without the reference,
and copied: feed with the inputs copied into new memory as the last step, which is how candidates are fed. Ratios are against fixed; `mallocs` counts the allocator's new device segments while timing
(each a cudaMalloc, which inside the timed call would be timed).
"""
import statistics
from pathlib import Path

import torch

from evolve.harness.child import _load_module
from evolve.harness.problem import load_problem
from evolve.harness.timing import GpuTimer, fresh_copy

ROOT = Path(__file__).resolve().parents[1]


def segments() -> int:
    return torch.cuda.memory_stats().get("segment.all.allocated", 0)


def main():
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    problem = load_problem(ROOT / "problems/softmax")
    ref = _load_module("softmax_reference", problem.reference_path)
    timer = GpuTimer(torch.device("cuda"))
    fn = lambda x: torch.softmax(x, -1)  # noqa: E731
    print(f"device: {torch.cuda.get_device_name()}")
    print(f"{'case':<22}{'fixed us':>9}{'feed':>8}{'no ref':>8}{'copied':>8}   mallocs in each")
    ratios = []
    for case in problem.benchmarks:
        sets = [ref.generate_input(1000 + i, device="cuda", **case.kwargs) for i in range(2)]
        held = {}

        def feed(k, with_ref=True, copy_last=False):
            inputs = ref.generate_input(2000 + k, device="cuda", **case.kwargs)
            if with_ref:
                held[k] = ref.ref_kernel(*[t.clone() for t in inputs]).float()
            return fresh_copy(inputs) if copy_last else inputs

        def drop(out, k):
            held.pop(k, None)

        figures, mallocs = [], []
        for source, check in ((sets, None), (feed, drop), (lambda k: feed(k, False), drop),
                              (lambda k: feed(k, True, True), drop)):
            before = segments()
            figures.append(timer.time(fn, source, check))
            mallocs.append(segments() - before)
        base = figures[0]["ms"]
        ratios.append(figures[3]["ms"] / base)
        flags = "".join(" hidden" if f["hidden_work"] else "" for f in figures)
        print(f"{case.label:<22}{base * 1e3:>9.1f}"
              + "".join(f"{f['ms'] / base:>8.3f}" for f in figures[1:])
              + f"   {'/'.join(str(c) for c in mallocs)}{flags}")
        del sets, held
    print(f"copied/fixed (as candidates are fed): median {statistics.median(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main()
