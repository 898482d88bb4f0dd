"""Problem folders: the shipped ones load; malformed ones fail with a message that says what to fix."""
import shutil
from pathlib import Path

import pytest

from evolve.harness import ProblemError, load_problem

ROOT = Path(__file__).resolve().parents[1]


def test_softmax_problem_loads(softmax_dir):
    p = load_problem(softmax_dir)
    assert p.name == "softmax" and p.dtypes == ("float32", "bfloat16")
    shapes = {tuple(v for _, v in c.shape) for c in p.tests}
    assert {(1, 7), (1000, 1000), (3, 20000)} <= shapes
    bench = {tuple(v for _, v in c.shape) for c in p.benchmarks}
    assert {(4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072)} <= bench
    assert {c.dtype for c in p.benchmarks} == {"float32", "bfloat16"}
    assert "torch.softmax" in p.forbid_calls and "Tensor.softmax" in p.forbid_calls
    assert "reference" in p.forbid_modules
    assert p.seed_files() and p.notes


@pytest.fixture
def broken(tmp_path, softmax_dir):
    target = tmp_path / "softmax"
    shutil.copytree(softmax_dir, target)
    return target


def test_missing_folder(tmp_path):
    with pytest.raises(ProblemError, match="not a folder"):
        load_problem(tmp_path / "nope")


def test_missing_toml(broken):
    (broken / "problem.toml").unlink()
    with pytest.raises(ProblemError, match="problem.toml: missing"):
        load_problem(broken)


def test_invalid_toml(broken):
    (broken / "problem.toml").write_text("name = \n")
    with pytest.raises(ProblemError, match="not valid TOML"):
        load_problem(broken)


def test_missing_tolerance(broken):
    text = (broken / "problem.toml").read_text().replace("[tolerance.bfloat16]", "[tolerance.other]")
    (broken / "problem.toml").write_text(text)
    with pytest.raises(ProblemError, match=r"missing \[tolerance.bfloat16\]"):
        load_problem(broken)


def test_bad_shape(broken):
    text = (broken / "problem.toml").read_text().replace("shape = { M = 1, N = 7 }", "shape = { M = 0, N = 7 }")
    (broken / "problem.toml").write_text(text)
    with pytest.raises(ProblemError, match="M = 0 must be a positive integer"):
        load_problem(broken)


def test_reference_without_functions(broken):
    (broken / "reference.py").write_text("def generate_input(seed, M, N):\n    pass\n")
    with pytest.raises(ProblemError, match="missing function.*ref_kernel"):
        load_problem(broken)


def test_reference_syntax_error(broken):
    (broken / "reference.py").write_text("def generate_input(:\n")
    with pytest.raises(ProblemError, match="syntax error"):
        load_problem(broken)
