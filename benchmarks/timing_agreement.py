"""Does the harness's GPU timer agree with triton.testing.do_bench? Prints a table; needs a CUDA GPU.

    python benchmarks/timing_agreement.py

Both time torch.softmax on the same shapes with the L2 flushed; the harness also copies fresh inputs every repetition
(outside the timed region). The ratio column is harness median / do_bench median.
"""
import statistics

import torch
import triton.testing

from evolve.harness.timing import GpuTimer

SHAPES = [(4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072)]


def main():
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    timer = GpuTimer(torch.device("cuda"))
    print(f"device: {torch.cuda.get_device_name()}  harness fixed overhead: {timer.overhead_ms * 1e3:.1f} us")
    print(f"{'dtype':<6}{'M x N':>14}{'harness ms':>12}{'do_bench ms':>13}{'ratio':>8}{'reps':>6}")
    ratios = []
    for dtype in (torch.float32, torch.bfloat16):
        for m, n in SHAPES:
            sets = [(torch.randn(m, n, device="cuda", dtype=dtype),) for _ in range(2)]
            ours = timer.time(lambda x: torch.softmax(x, -1), sets)
            x = sets[0][0]
            theirs = triton.testing.do_bench(lambda: torch.softmax(x, -1), warmup=25, rep=200, return_mode="median")
            ratio = ours["ms"] / theirs
            ratios.append(ratio)
            name = str(dtype).replace("torch.", "")
            print(f"{name:<6}{f'{m}x{n}':>14}{ours['ms']:>12.4f}{theirs:>13.4f}{ratio:>8.3f}{ours['reps']:>6}")
    print(f"median ratio {statistics.median(ratios):.3f}; within 5%: {sum(abs(r - 1) <= 0.05 for r in ratios)}"
          f" of {len(ratios)}")


if __name__ == "__main__":
    main()
