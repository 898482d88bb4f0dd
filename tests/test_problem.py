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


def test_a_problems_name_and_the_folder_of_problems_say_what_to_name(tmp_path, monkeypatch):
    """`evolve run softmax` and `evolve run problems` from the repository: the first names problems/softmax, the
    second the problems it holds; a folder with files in it is not offered to `evolve init`, which refuses it."""
    monkeypatch.chdir(ROOT)
    with pytest.raises(ProblemError, match=r"^softmax: not a folder.*did you mean problems/softmax\?$"):
        load_problem("softmax")
    with pytest.raises(ProblemError, match=r"^problems: a folder of problems \(.*softmax.*\).*e\.g\. problems/"):
        load_problem("problems")
    with pytest.raises(ProblemError) as raised:
        load_problem("docs")
    assert "evolve init NEW_FOLDER" in str(raised.value) and "evolve init docs" not in str(raised.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProblemError, match="evolve init .*empty` writes one there"):
        load_problem(tmp_path / "empty")


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


def test_every_shipped_problem_loads():
    names = {p.name for p in (ROOT / "problems").iterdir() if p.is_dir()}
    for name in names:
        problem = load_problem(ROOT / "problems" / name)
        assert problem.name == name and problem.format == "evolve"
        assert problem.tests and problem.benchmarks and problem.cpu_benchmarks and problem.forbid_calls
        assert problem.notes and problem.seed_files()


def test_case_params_and_output_dtypes(broken):
    toml = broken / "problem.toml"
    text = toml.read_text().replace("shape = { M = 1, N = 7 }", "shape = { M = 1, N = 7 }\nparams = { causal = true }")
    toml.write_text(text.replace('seeds = [1, 2, 3]', 'seeds = [1, 2, 3]\noutput_dtypes = ["input", "int64"]'))
    p = load_problem(broken)
    case = p.tests[0]
    assert case.kwargs == {"M": 1, "N": 7, "causal": True, "dtype": "float32"}
    assert case.label == "fp32 1x7 causal=True"
    assert p.output_dtype(0, case, "float64") == "float32" and p.output_dtype(1, case, "float64") == "int64"
    assert p.tolerance_for(case, "int64").rtol == 0  # integers are compared exactly
    assert p.tolerance_for(case, "float32") == p.tolerance["float32"]


@pytest.mark.parametrize("edit, message", [
    (("shape = { M = 1, N = 7 }", "shape = { M = 1, N = 7 }\nparams = { causal = [1] }"),
     "params.causal = \\[1\\] must be a boolean, number or string"),
    (("shape = { M = 1, N = 7 }", "shape = { M = 1, N = 7 }\nparams = { M = 2 }"), "params.M clashes"),
    (("seeds = [1, 2, 3]", 'seeds = [1, 2, 3]\noutput_dtypes = ["complex64"]'), "output_dtypes names 'complex64'"),
    (("shape = { M = 1, N = 7 }", "shape = { M = 1, N = 7 }\nsize = 3"), "unknown key\\(s\\) size"),
    (("rtol = 1e-4", "rtol = -1.0"), "needs rtol >= 0"),
    (("seeds = [1, 2, 3]", "seeds = []"), "seeds must be a list of at least one integer"),
])
def test_malformed_fields_name_the_field(broken, edit, message):
    toml = broken / "problem.toml"
    text = toml.read_text()
    assert edit[0] in text
    toml.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ProblemError, match=message):
        load_problem(broken)


def test_layernorms_inputs_leave_an_honest_float32_kernel_within_tolerance_at_every_row_length():
    """The correctness rung draws shapes from what a problem accepts (layernorm: rows of 1 to 40,000): two draws of
    a row of two could lie so close that its variance was far below eps, and the float32 seed failed a drawn
    1539x2 (max_rel 2.3e-3 > rtol 5e-4). A two-pass float32 layer norm must pass every row length."""
    import importlib.util

    import torch

    problem = load_problem(ROOT / "problems" / "layernorm")
    spec = importlib.util.spec_from_file_location("layernorm_reference", problem.reference_path)
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    tol = problem.tolerance_for(problem.tests[0], "float32")
    for seed in range(3):
        for n in (1, 2, 3, 4, 5, 8, 33):
            x, w, b = reference.generate_input(seed, 2000, n)
            d = x - x.sum(1, keepdim=True) / n
            y = d * torch.rsqrt((d * d).sum(1, keepdim=True) / n + 1e-5) * w + b
            ref = reference.ref_kernel(x, w, b)
            worst = float(((y.double() - ref).abs() / ref.abs().clamp_min(tol.floor)).max())
            assert worst <= tol.rtol, (seed, n, worst)
