"""`evolve model apply`: each problem's best archived kernel put back into the program it was extracted from, the
program's outputs checked against the original, and the end-to-end time before and after beside what Amdahl's law
predicts from the kernels' own measured speed-ups over torch (GPU). The substituted program runs in a child process
(substitute.py): on the CPU under the Triton interpreter, whose times are the interpreter's, not a GPU's."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from .program import ProgramError

CPU_NOTE = ("CPU: the kernels ran under the Triton interpreter, so the after time is the interpreter's, not a GPU's, "
            "and there is no prediction; run this on the card for the end-to-end gain")


def _kernel_entry(problem_dir: Path, db: str, kernels_dir: Path) -> dict:
    from ..api import SetupError, best
    from ..problems import strip_test_header

    origin_path = problem_dir / "origin.json"
    if not origin_path.is_file():
        raise ProgramError(f"{problem_dir}: no origin.json; apply takes folders `evolve model extract` wrote")
    origin = json.loads(origin_path.read_text())
    try:
        found = best(problem_dir, db=db)
    except SetupError as exc:
        raise ProgramError(str(exc)) from exc
    if found is None or not found.candidate.source:
        raise ProgramError(f"{problem_dir.name}: no correct kernel in {db}; run `evolve run {problem_dir}` first")
    file = kernels_dir / f"{problem_dir.name}.py"
    file.write_text(strip_test_header(found.candidate.source))
    speedups = [row.get("speedup_vs_torch") for row in (found.verdict.shapes if found.verdict else ())]
    speedups = [s for s in speedups if s]
    return {"problem": problem_dir.name, "kind": origin["kind"], "code": origin["code"], "roles": origin["roles"],
            "file": str(file), "candidate": found.candidate.id, "score": found.candidate.score,
            "speedup_vs_torch": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None}


def apply(program, problem_dirs: list, db: str, out_dir, device: str, repeats: int = 10,
          timeout_s: float = 1800.0) -> dict:
    """The substituted program's check and times, with the kernels used; writes kernels/, patched_forward.py,
    spec.json and result.json into out_dir."""
    out = Path(out_dir).resolve()
    (out / "kernels").mkdir(parents=True, exist_ok=True)
    kernels = [_kernel_entry(Path(d).resolve(), db, out / "kernels") for d in problem_dirs]
    spec = {"program": str(Path(program).resolve()), "device": device, "repeats": repeats, "out": str(out),
            "kernels": kernels}
    (out / "spec.json").write_text(json.dumps(spec, indent=1))
    env = dict(os.environ)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # read when triton is imported: set before the child starts
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "evolve.model_tools.substitute", str(out / "spec.json")], env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise ProgramError(f"the substituted program failed (exit {done.returncode}): {done.stderr[-2000:]}")
    result = json.loads((out / "result.json").read_text())
    result["kernels"] = kernels
    result["prediction"] = _predicted(result, kernels)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return result


def _predicted(result: dict, kernels: list) -> float | None:
    """Amdahl: the forward's time with each replaced part divided by its kernel's measured speed-up over torch."""
    if result["device"] == "cpu" or any(k["speedup_vs_torch"] is None for k in kernels):
        return None
    total = result["before_ms"]
    saved = sum(result["parts_ms"][k["problem"]] * (1 - 1 / k["speedup_vs_torch"]) for k in kernels)
    return total / max(total - saved, 1e-12)


def render(result: dict) -> str:
    lines = [f"{'problem':<36} {'kernel':>8} {'calls':>5} {'torch ms':>9} {'vs torch':>8}"]
    for k in result["kernels"]:
        vs = f"{k['speedup_vs_torch']:7.2f}x" if k["speedup_vs_torch"] and result["device"] != "cpu" else f"{'-':>8}"
        lines.append(f"{k['problem'][:36]:<36} {'#' + str(k['candidate']):>8} {result['replaced'][k['problem']]:>5} "
                     f"{result['parts_ms'][k['problem']]:9.4f} {vs}")
    before, after = result["before_ms"], result["after_ms"]
    predicted = f"{result['prediction']:.3f}x" if result["prediction"] else "-"
    lines += ["", f"{'end to end':<12} {'before ms':>10} {'after ms':>10} {'speed-up':>9} {'predicted':>10} "
                  f"{'outputs':>8}",
              f"{result['device']:<12} {before:10.3f} {after:10.3f} {before / after:8.3f}x {predicted:>10} "
              f"{'match' if result['match'] else 'DIFFER':>8}  (max abs diff {result['max_abs_diff']:.2g})"]
    if result["device"] == "cpu":
        lines.append(CPU_NOTE)
    else:
        lines.append("predicted: Amdahl's law from each kernel's measured speed-up over torch (geomean of its "
                     "benchmark cases) and its part of the forward timed op by op")
    return "\n".join(lines)
