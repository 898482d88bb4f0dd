"""The launch audit on a GPU with Nsight Compute: honest kernels pass, a cuBLAS call fails. Prints a table.

    PYTHONPATH=. python benchmarks/launch_audit_check.py [--no-ladder] [--out DIR]

Each case is evaluated through the whole ladder first (its compile rung's kernel names are what the audit allows,
with the @triton.jit functions of its source; --no-ladder: the source's only, faster), then audited the way
`evolve run` audits its best (evolve/launch_audit.py: one ncu run over every benchmark case, warm call and one more
per case: one call alone, then four in a row as a timing window queues them). Cases:
  softmax seed      problems/softmax/seeds/softmax_rows.py on problems/softmax            must pass
  honest control    tests/adversarial/cases/honest_control.py on tests/adversarial/problem must pass
  matmul cuBLAS     benchmarks/audit_cases/matmul_cublas.py on problems/matmul            must fail (cuBLAS)
  window merge      tests/adversarial/cases/window_merge.py on tests/adversarial/problem  must fail (calls merged)
  mini seed         tests/data/mini_softmax/seeds/softmax_rows.py on tests/data/mini_softmax must pass (its report
                    is the one tests/test_launch_audit.py replays)
With --out (default $OUT where set) each audit's ncu report and line go there. Exit status 1 if any case is not as
expected; 2 if the audit could not run at all (no GPU, no ncu).
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evolve.launch_audit import FAILED, NOT_RUN, PASSED, Auditor, allowed_names  # noqa: E402

CASES = [
    ("softmax seed", ROOT / "problems/softmax/seeds/softmax_rows.py", ROOT / "problems/softmax", PASSED, ""),
    ("honest control", ROOT / "tests/adversarial/cases/honest_control.py", ROOT / "tests/adversarial/problem", PASSED,
     ""),
    ("matmul cuBLAS", ROOT / "benchmarks/audit_cases/matmul_cublas.py", ROOT / "problems/matmul", FAILED, "cuBLAS"),
    ("window merge", ROOT / "tests/adversarial/cases/window_merge.py", ROOT / "tests/adversarial/problem", FAILED,
     "each call must launch its own work"),
    ("mini seed", ROOT / "tests/data/mini_softmax/seeds/softmax_rows.py", ROOT / "tests/data/mini_softmax", PASSED,
     ""),
]


def ladder(path: Path, problem: Path, cache: str):
    from evolve.harness import EvalOptions, evaluate

    started = time.perf_counter()
    verdict = evaluate(path, problem, EvalOptions(device="cuda", cache_dir=cache))
    failure = verdict.failure
    state = "ok" if verdict.ok else f"{failure.name}: {' '.join((failure.reason or '').split())[:60]}" if failure \
        else "no verdict"
    return verdict, state, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ladder", action="store_true", help="allow the source's @triton.jit functions only")
    parser.add_argument("--out", default=os.environ.get("OUT"), help="folder for the reports")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no GPU here: the launch audit needs one")
        return 2
    auditor = Auditor()
    if auditor.unavailable:
        print(f"launch audit not run: {auditor.unavailable}")
        return 2
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    rows, wrong = [], 0
    with tempfile.TemporaryDirectory() as cache:
        for label, path, problem, want, fragment in CASES:
            verdict, state, ladder_s = (None, "skipped", 0.0) if args.no_ladder else ladder(path, problem, cache)
            source = path.read_text()
            allowed = allowed_names(verdict, source)
            audit = auditor.audit(source, problem, allowed)
            good = audit.status == want and fragment in audit.reason
            wrong += not good
            seen = ", ".join(f"{name[:48]} x{count}" for name, count in audit.kernels[:3]) or "-"
            rows.append((label, state, seen, audit.status, audit.seconds, ladder_s, "yes" if good else "NO"))
            print(f"{label}: ladder {state} ({ladder_s:.1f} s); allowed {', '.join(allowed)}", flush=True)
            print(f"  {audit.line}", flush=True)
            if out:
                stem = label.replace(" ", "_")
                (out / f"{stem}.ncu.csv").write_text(audit.report)
                (out / f"{stem}.txt").write_text(f"{audit.line}\nallowed: {allowed}\nkernels: {audit.kernels}\n")
            if audit.status == NOT_RUN:
                print("the audit was not run; the rest would not run either")
                break
    print()
    print(f"{'case':<16}{'ladder':<26}{'verdict':<9}{'audit s':>8}{'ladder s':>9}  {'as expected':<12}kernels seen")
    for label, state, seen, status, seconds, ladder_s, good in rows:
        print(f"{label:<16}{state[:25]:<26}{status:<9}{seconds:>8.1f}{ladder_s:>9.1f}  {good:<12}{seen}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
