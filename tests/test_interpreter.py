"""The CPU mode's interpreter, its module listing taken once (lang/triton/interpreter.py), computes what Triton's own
does: it wraps the same members at every call, and every problem's seeds and correct solutions give the same outputs,
bit for bit. Each side runs in a process of its own (the speed-up changes Triton's interpreter module for the
process)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PATCHES = r"""
import json, sys, types
import triton
import triton.language as tl
from triton.runtime import interpreter as I

original = I._patch_builtin
from evolve.lang.triton.interpreter import speed_up
assert speed_up() and I._patch_builtin is not original

def wrapped(fn, pkg):
    scope = I._LangPatchScope()
    fn(pkg, I.interpreter_builder, scope)
    names = sorted(name for _, name, _ in scope._changes)
    scope.restore()
    return names

modules = {"tl": tl, "tl.core": tl.core, "tl.tensor": tl.tensor, "tl.math": tl.math,
           "descriptor": tl.core.tensor_descriptor_base}
other = types.ModuleType("other")  # a module the listing never saw: the original's own way
other.pid, other.plain = tl.core.program_id, len

def kernel():  # a plain function whose globals hold `tl`, as a kernel's do
    return tl

def nested():  # one whose globals hold `tl.core` only, as the standard library's helpers (tl.max, tl.sum) do
    return core
core = tl.core
nested.__globals__["core"] = tl.core

report = {}
for state in ("clean", "inside a kernel's patch", "inside a helper's patch", "after both"):
    if state == "inside a kernel's patch":
        outer = I._patch_lang(kernel)
    if state == "inside a helper's patch":
        inner = I._patch_lang(nested)
    if state == "after both":
        inner.restore()
        outer.restore()
    for label, module in [*modules.items(), ("other", other)]:
        report[f"{state}: {label}"] = [wrapped(original, module), wrapped(I._patch_builtin, module)]
print(json.dumps(report))
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_same_members_are_wrapped_at_every_call():
    report = json.loads(_python(PATCHES).splitlines()[-1])
    assert len(report) == 24
    for where, (theirs, ours) in report.items():
        assert ours == theirs, where
    # the comparison has something to compare: a clean module has its builtins wrapped, a patched one has none left
    assert len(report["clean: tl"][0]) > 50 and "program_id" in report["clean: tl.core"][0]
    assert report["clean: other"][0] == ["pid"]
    assert report["inside a kernel's patch: tl"][0] == []
    assert report["after both: tl"][0] == report["clean: tl"][0]


OUTPUTS = r"""
import sys, torch
from pathlib import Path
from evolve.harness import load_problem
from evolve.harness.shared.formats import reference_for
from evolve.lang.triton.launches import LaunchLog

if sys.argv[1] == "fast":
    from evolve.lang.triton.interpreter import speed_up
    assert speed_up()
import importlib.util
out = {}
for path in sys.argv[3:]:
    path = Path(path)
    problem = load_problem(path.parents[1] if path.parent.name == "seeds" else path.parents[2])
    reference = reference_for(problem)
    spec = importlib.util.spec_from_file_location(f"c{len(out)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    small = sorted(problem.tests, key=lambda c: sum(t.numel() for t in reference.generate(c, 1, "cpu").leaves
                                                  if isinstance(t, torch.Tensor)))[:2]
    for i, case in enumerate(small):
        inputs = reference.generate(case, 7 + i, "cpu")
        result = module.custom_kernel(*inputs.leaves)
        result = result if isinstance(result, (tuple, list)) else (result,)
        out[f"{problem.name}/{path.parent.name}/{path.stem} {case.label}"] = [
            t.contiguous().reshape(-1).view(torch.uint8).clone() for t in result]
torch.save(out, sys.argv[2])
"""


def _kernel_files() -> list[Path]:
    files = sorted(ROOT.glob("problems/*/seeds/*.py")) + sorted(ROOT.glob("problems/*/solutions/correct/*.py"))
    assert len(files) >= 20
    return files


@pytest.mark.slow
def test_every_seed_and_correct_solution_gives_the_same_bits(tmp_path):
    import torch

    files = [str(f) for f in _kernel_files()]
    _python(OUTPUTS, "triton", str(tmp_path / "theirs.pt"), *files)
    _python(OUTPUTS, "fast", str(tmp_path / "ours.pt"), *files)
    theirs, ours = torch.load(tmp_path / "theirs.pt"), torch.load(tmp_path / "ours.pt")
    assert list(ours) == list(theirs) and len(theirs) >= 2 * len(files)
    for key, outputs in theirs.items():
        assert len(ours[key]) == len(outputs), key
        for a, b in zip(outputs, ours[key]):
            assert a.numel() > 0 and torch.equal(a, b), key


def test_the_interpreters_runner_installs_it(tmp_path):
    code = ("import sys; from pathlib import Path; from triton.runtime import interpreter as I; "
            "original = I._patch_builtin; from evolve.harness.runner.runner import Runner; "
            "Runner(None, 'interpret', Path(sys.argv[1]), 'triton'); print(I._patch_builtin is not original, "
            "I._patch_builtin.original is original)")
    assert _python(code, str(tmp_path)).split() == ["True", "True"]
