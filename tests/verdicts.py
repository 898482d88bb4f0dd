"""Verdicts built by hand, for tests of what reads them (archive, search, render): every rung of the ladder, in
order."""
from evolve.harness import RUNGS, RungResult, Verdict


def ladder(failed=None, roofline="ok", fitness=0.74, shapes=(), mode="gpu") -> Verdict:
    """A verdict that fails at rung `failed` (the rungs after it skipped), or passes with `fitness`."""
    rungs, seen = [], False
    for name in RUNGS:
        status = "failed" if name == failed else "skipped" if seen else roofline if name == "roofline" else "ok"
        seen = seen or status == "failed"
        rungs.append(RungResult(name, status, f"{name} broke" if status == "failed" else None, 0.25,
                                {"checks": 3} if name == "correctness" else {}))
    return Verdict(problem="softmax", candidate="/tmp/c.py", mode=mode,
                   device="NVIDIA H200" if mode == "gpu" else "cpu", rungs=tuple(rungs),
                   fitness=None if failed else fitness, shapes=tuple(shapes), secret=7,
                   versions={"torch": "2.13.0", "triton": "3.9.0"}, jail="landlock ABI 4")
