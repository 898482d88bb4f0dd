"""check-problem's run of a problem's own functions on its test cases, in the process that may run them (a jailed
child: harness/parent/jailed.py)."""
from __future__ import annotations


def reference_faults(problem, notes: list) -> list[str]:
    """Run the problem's own functions on every test case: they run, the generator depends on its seed (a foreign
    folder's case that does not is noted, not faulted), the reference's outputs are finite and as many as declared,
    the roofline formulas give numbers."""
    import math

    import torch

    from ..shared.formats import reference_for

    where = problem.reference_path.name
    try:
        ref = reference_for(problem)
    except Exception as exc:  # noqa: BLE001 - the problem's own code, reported
        return [f"{where}: importing it raised {type(exc).__name__}: {exc}"[:300]]
    faults: dict = {}  # one line per kind of fault: the first case that shows it

    def fault(kind: str, message: str) -> None:
        faults.setdefault(kind, message[:300])

    for case in problem.tests:
        try:
            first, second = ref.generate(case, 1, "cpu"), ref.generate(case, 2, "cpu")
        except Exception as exc:  # noqa: BLE001
            fault("generate", f"{where}: generate_input raised on {case.label}: {type(exc).__name__}: {exc}")
            continue
        if _same(first, second) and problem.format == "evolve":
            fault("seed", f"{where}: generate_input ignores its seed: seeds 1 and 2 give the same input for "
                  f"{case.label}")
        elif _same(first, second):  # upstream's cases fixed by design (cholesky's "diagonal" ones, say)
            notes.append(f"{case.label}: fixed by design (the same input whatever the seed), checked and timed as "
                         "it is")
        try:
            outs = ref.reference(first, on_cpu=True)
        except Exception as exc:  # noqa: BLE001
            fault("reference", f"{where}: ref_kernel raised on {case.label}: {type(exc).__name__}: {exc}")
            continue
        if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
            fault("returns", f"{where}: ref_kernel must return a tensor or a tuple of tensors ({case.label})")
            continue
        if not all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point()):
            fault("finite", f"{where}: ref_kernel gives NaN or Inf on {case.label}: the inputs or the reference "
                  f"are not what a kernel can match")
        if problem.output_dtypes is not None and len(problem.output_dtypes) != len(outs):
            fault("outputs", f"problem.toml: output_dtypes names {len(problem.output_dtypes)} output(s), "
                  f"ref_kernel returns {len(outs)} ({case.label})")
    for case in problem.benchmarks + problem.cpu_benchmarks:
        for name in ("bytes_moved", "flops"):
            try:
                value = ref.formula(name, case)
            except Exception as exc:  # noqa: BLE001
                fault(name, f"{where}: {name} raised on {case.label}: {type(exc).__name__}: {exc}")
                continue
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                      or not math.isfinite(value) or value < 0):
                fault(name, f"{where}: {name} must return a number >= 0, gave {value!r} for {case.label}")
    return list(faults.values())


def _same(a, b) -> bool:
    import torch

    if len(a.leaves) != len(b.leaves):
        return False
    for x, y in zip(a.leaves, b.leaves):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True
