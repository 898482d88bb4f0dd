"""`evolve init` writes a folder that `evolve check-problem` explains until its TODOs are filled, and then passes;
check-problem names each fault of a broken problem in one line and exits 2, touching nothing."""
import re
from pathlib import Path

import pytest

from evolve.problems import check_problem, init_problem
from test_run import evolve


def fill(folder: Path) -> None:
    """What a user does after `evolve init`: the op is out = 2 * x, every TODO replaced."""
    edits = {
        "reference.py": [("  # TODO: inputs that find the op's pitfalls", ""),
                         ('raise NotImplementedError("TODO: compute the op in float64 and return the output(s)")',
                          "return 2.0 * x"),
                         ("  # TODO: check against the op's inputs and outputs", ""),
                         ("  # TODO: count the op's operations per element", "")],
        "problem.toml": [("TODO: describe the op: out = f(x)", "out = 2 * x"),
                         ("# TODO: justify: a few ulp of float32 for an elementwise op", "# doubling is exact"),
                         ("# TODO: justify: one bf16 ulp (7.8e-3) and no more", "# doubling is exact in bf16 too"),
                         ("TODO: name them.\ncalls = []", "\ncalls = [\"torch.mul\", \"Tensor.mul\"]")],
        "notes.md": [("TODO: the formula, shapes and dtypes.", "out = 2 x, elementwise."),
                     ("TODO: numerical pitfalls", "None: doubling is exact; "),
                     ("TODO: memory- or compute-bound", "Memory-bound")],
        "seeds/seed.py": [("Seed: TODO: one line on what this kernel does.", "Seed: doubles x."),
                          ("y = x  # TODO: compute the op in float32", "y = 2.0 * x")],
        "solutions/wrong/wrong_tail.py": [("y = x  # TODO: the same op as the seed", "y = 2.0 * x")],
    }
    for name, pairs in edits.items():
        path = folder / name
        text = path.read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new)
        path.write_text(text)
    leftover = [p for p in folder.rglob("*") if p.is_file() and "TODO" in p.read_text()]
    assert not leftover, leftover


def snapshot(folder: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_init_refuses_a_folder_in_use(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    result = evolve("init", tmp_path / "taken")
    assert result.returncode == 2 and "not an empty folder" in result.stderr
    assert (tmp_path / "taken" / "file").read_text() == "x"


def test_fresh_scaffold_lists_what_to_fill_and_exits_2(tmp_path):
    folder = tmp_path / "twice"
    assert evolve("init", folder).returncode == 0
    before = snapshot(folder)
    result = evolve("check-problem", folder, "--device", "cpu")
    assert result.returncode == 2
    lines = result.stdout.strip().splitlines()
    todos = [n for n, line in enumerate((folder / "reference.py").read_text().splitlines(), 1) if "TODO" in line]
    assert len(todos) > 1 and all(f"reference.py:{n}: TODO left" in result.stdout for n in todos)  # each, not one
    assert any(line.startswith("seeds/seed.py:1: TODO left") for line in lines)
    assert any("ref_kernel raised" in line and "NotImplementedError" in line for line in lines)
    assert len([line for line in lines if "ref_kernel raised" in line]) == 1  # one line per fault, not per case
    assert snapshot(folder) == before  # nothing touched


@pytest.mark.slow
def test_filled_scaffold_passes_then_a_lenient_problem_is_caught(tmp_path):
    folder = tmp_path / "twice"
    init_problem(folder)
    fill(folder)
    result = evolve("check-problem", folder, "--device", "cpu")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "no fault found" in result.stdout
    # A "wrong" solution that is in fact right: the tests and tolerances admit it, and check-problem says so.
    wrong = folder / "solutions" / "wrong" / "wrong_tail.py"
    wrong.write_text(wrong.read_text().replace("offs < n_elements - 1", "offs < n_elements"))
    faults = check_problem(folder, device="cpu")
    assert faults == ["solutions/wrong/wrong_tail.py: passes every rung: the tests or tolerances admit a "
                      "known-wrong kernel"]


def test_reference_faults_are_named(tmp_path):
    folder = tmp_path / "twice"
    init_problem(folder)
    fill(folder)
    reference = folder / "reference.py"
    text = reference.read_text()
    reference.write_text(text.replace("g.manual_seed(seed)", "g.manual_seed(0)"))
    assert check_problem(folder, device="cpu") == [
        "reference.py: generate_input ignores its seed: seeds 1 and 2 give the same input for fp32 1x7"]
    reference.write_text(text.replace("return 2.0 * x", "return 2.0 * x / 0.0"))
    faults = check_problem(folder, device="cpu")
    assert faults == ["reference.py: ref_kernel gives NaN or Inf on fp32 1x7: the inputs or the reference are "
                      "not what a kernel can match"]
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().replace("[tolerance.bfloat16]", "[tolerance.other]"))
    result = evolve("check-problem", folder)
    assert result.returncode == 2
    assert result.stdout.strip().splitlines() == [f"{toml.resolve()}: missing [tolerance.bfloat16] with rtol, floor "
                                                  f"and min_cosine"]


def test_a_misspelt_key_is_refused_naming_the_known_ones(tmp_path):
    """`call =` under [forbid] used to load as a problem that forbids nothing; every table's keys are checked, by
    check-problem and by the commands that load a problem."""
    folder = tmp_path / "twice"
    init_problem(folder)
    fill(folder)
    toml = folder / "problem.toml"
    text = toml.read_text()
    assert 'calls = ["torch.mul"' in text and "rtol = 1e-5" in text
    toml.write_text(text.replace('calls = ["torch.mul"', 'call = ["torch.mul"'))
    where = toml.resolve()
    forbid = (f"{where}: [forbid] has an unknown key 'call' (did you mean 'calls'?); the known keys are calls, "
              f"modules")
    assert check_problem(folder, device="cpu") == [forbid]
    toml.write_text(text.replace("rtol = 1e-5", "rtl = 1e-5\nrtol = 1e-5").replace("[[benchmark]]", "[[benchmarks]]", 1)
                    .replace("[tolerance.bfloat16]", "[tolerance.float16]\nrtol = 1e-3\nfloor = 1e-3\n"
                                                      "min_cosine = 0.999\n[tolerance.bfloat61]\nrtol = 1\n"
                                                      "[tolerance.bfloat16]"))
    faults = check_problem(folder, device="cpu")
    assert faults == [
        f"{where}: the top level has an unknown key 'benchmarks' (did you mean 'benchmark'?); the known keys are "
        "name, description, dtypes, seeds, output_dtypes, tolerance, test, benchmark, cpu_benchmark, forbid, "
        "languages, accepts",
        f"{where}: [tolerance] has an unknown dtype 'bfloat61' (did you mean 'bfloat16'?); the known dtypes are "
        "float32, bfloat16, float16",
        f"{where}: [tolerance.float32] has an unknown key 'rtl' (did you mean 'rtol'?); the known keys are rtol, "
        "floor, min_cosine"], faults
    toml.write_text(text.replace('calls = ["torch.mul"', 'call = ["torch.mul"'))
    for args in (("check-problem", folder, "--device", "cpu"), ("run", folder, "--device", "cpu"),
                 ("eval", folder / "seeds" / "seed.py", folder, "--device", "cpu")):
        result = evolve(*args, timeout=300)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert forbid in result.stdout + result.stderr and "Traceback" not in result.stderr, args
