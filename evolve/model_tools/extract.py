"""`evolve model extract`: a problem folder per picked pattern, written from the program's own op or chain: the
reference is its FX code (parameters as inputs), the benchmark cases the shapes it ran at (counts in the description:
problem.toml has no weights), tolerances by dtype as the shipped problems of the same kind set them, a Triton seed and
a wrong kernel (one per output for a chain with several), and origin.json, which `evolve model apply` reads to find
the pattern in the program again."""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import problem_text
from .patterns import Pattern
from .profile import traced_program
from .program import ProgramError
from .seeds import linear_seed, rows_seed


def problem_name(program: Path, pattern: Pattern) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{program.stem}_{pattern.id}_{pattern.label.replace('+', '_')}")


def extract(program, picks: list[str], out_dir, device: str = "cpu") -> list[Path]:
    """Write one problem folder per picked pattern id under out_dir; the folders written."""
    program = Path(program).resolve()
    _, patterns, _, _ = traced_program(program, device)
    by_id = {p.id: p for p in patterns}
    unknown = [pick for pick in picks if pick not in by_id]
    if unknown:
        raise ProgramError(f"no pattern {', '.join(unknown)} in {program.name}: the ids are "
                           f"{', '.join(by_id)} (evolve model profile {program.name} lists them)")
    written = []
    for pick in picks:
        pattern = by_id[pick]
        if pattern.kind is None:
            raise ProgramError(f"{pick} ({pattern.label}) cannot be written as a problem: extract takes chains and "
                               "ops of pointwise ops, layer_norm, rms_norm and softmax over the last dimension, and "
                               "linear (the profile marks each [rows] or [linear])")
        folder = Path(out_dir) / problem_name(program, pattern)
        if folder.exists() and any(folder.iterdir()):
            raise ProgramError(f"{folder} exists and is not empty: nothing written; remove it or pick another --out")
        _write(folder, program, pattern)
        written.append(folder)
    return written


def _write(folder: Path, program: Path, pattern: Pattern) -> None:
    name = folder.name
    unit = pattern.units[0]
    files = {
        "problem.toml": problem_text.problem_toml(name, program, pattern),
        "reference.py": problem_text.reference_py(program, pattern),
        "notes.md": problem_text.notes_md(program, pattern),
    }
    if pattern.kind == "rows":
        files["seeds/seed.py"] = rows_seed(unit, pattern.roles, pattern.label)
        files.update(_wrong_rows_kernels(pattern))
    else:
        files["seeds/seed.py"] = linear_seed("bias" in pattern.roles)
        files["solutions/wrong/missing_k_tail.py"] = linear_seed("bias" in pattern.roles, wrong=True)
    origin = {"program": str(program), "pattern": pattern.id, "label": pattern.label, "kind": pattern.kind,
              "code": pattern.code, "roles": list(pattern.roles), "outputs": pattern.output_ops(),
              "seen": [{"shape": dict(shape), "dtype": dtype, "calls": count}
                       for (shape, dtype), count in pattern.variants().items()]}
    files["origin.json"] = json.dumps(origin, indent=1) + "\n"
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (folder / "solutions" / "correct").mkdir(parents=True, exist_ok=True)


def _wrong_rows_kernels(pattern: Pattern) -> dict[str, str]:
    """The seed missing its last column: of its output, or one kernel per output where there are several, so that
    check-problem sees each output judged."""
    unit, outputs = pattern.units[0], pattern.output_ops()
    if len(outputs) == 1:
        return {"solutions/wrong/missing_last_column.py": rows_seed(unit, pattern.roles, pattern.label, 0)}
    return {f"solutions/wrong/missing_last_column_of_output{k}_{op}.py":
            rows_seed(unit, pattern.roles, pattern.label, k) for k, op in enumerate(outputs)}
