"""`evolve eval` as a user runs it: the printed ladder, exit codes, --json schema, --dump artifacts."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "problems" / "softmax"


def evolve(*args, cwd=ROOT, timeout=900):
    return subprocess.run([sys.executable, "-m", "evolve.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def test_failing_candidate_prints_ladder_and_exits_1(tmp_path):
    result = evolve("eval", SOFTMAX / "solutions" / "wrong" / "syntax_error.py", SOFTMAX, "--cache-dir", tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[load]") and "FAILED" in lines[0] and "SyntaxError at line" in lines[0]
    names = [line.split()[0] for line in lines[:6]]
    assert names == ["[load]", "[compile]", "[run]", "[correctness]", "[benchmark]", "[roofline]"]
    assert all("skipped" in line for line in lines[1:6])


def test_bad_problem_folder_exits_2_with_a_message(tmp_path):
    (tmp_path / "problem.toml").write_text("name = 'x'\n")
    result = evolve("eval", SOFTMAX / "seeds" / "softmax_rows.py", tmp_path)
    assert result.returncode == 2
    assert "error:" in result.stderr and "missing field 'dtypes'" in result.stderr


def test_json_is_the_only_stdout(tmp_path):
    result = evolve("eval", SOFTMAX / "solutions" / "wrong" / "method_softmax.py", SOFTMAX, "--json",
                    "--cache-dir", tmp_path)
    assert result.returncode == 1
    verdict = json.loads(result.stdout)
    assert verdict["ok"] is False
    load = verdict["rungs"][0]
    assert load["name"] == "load" and load["ok"] is False and "Tensor.softmax" in load["reason"]


@pytest.mark.slow
def test_json_schema_and_dump_on_the_seed(tmp_path):
    dump = tmp_path / "dump"
    result = evolve("eval", SOFTMAX / "seeds" / "softmax_rows.py", SOFTMAX, "--json", "--dump", dump,
                    "--cache-dir", tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr
    v = json.loads(result.stdout)
    assert isinstance(v["ok"], bool) and v["ok"]
    assert v["problem"] == "softmax" and isinstance(v["device"], str)
    assert [r["name"] for r in v["rungs"]] == ["load", "compile", "run", "correctness", "benchmark", "roofline"]
    for rung in v["rungs"]:
        assert isinstance(rung["ok"], bool) and isinstance(rung["seconds"], float)
        assert rung["reason"] is None or isinstance(rung["reason"], str)
        assert isinstance(rung["metrics"], dict)
    assert v["fitness"] is None or isinstance(v["fitness"], float)
    assert v["shapes"]
    for shape in v["shapes"]:
        assert isinstance(shape["shape"], dict) and isinstance(shape["dtype"], str)
        assert isinstance(shape["ms"], float) and shape["ms"] > 0
        assert "roofline_fraction" in shape and "speedup_vs_torch" in shape
    if v["mode"] == "cpu":
        assert all(s["clock"] == "cpu-interpreter" for s in v["shapes"])
        assert v["rungs"][-1]["status"] == "skipped" and v["fitness"] is None
    correctness = v["rungs"][3]["metrics"]["per_dtype"]
    assert set(correctness) == {"float32", "bfloat16"}
    for m in correctness.values():
        assert {"max_abs", "max_rel", "mse", "rmse", "psnr", "cosine"} <= set(m)
    # compile rung: real Hopper code without a GPU
    kernels = v["rungs"][1]["metrics"]["kernels"]
    assert kernels and all(k["arch"].startswith("sm_90") for k in kernels)
    assert all(isinstance(k["regs"], int) and k["regs"] > 0 for k in kernels)
    for ext in ("ttir", "ttgir", "llir", "ptx", "cubin", "sass"):
        assert list(dump.glob(f"*.{ext}")), f"no .{ext} in the dump"
    sass = next(dump.glob("*.sass")).read_text()
    assert "sm_90" in sass and "EXIT" in sass
    ptx = next(dump.glob("*.ptx")).read_text()
    assert ".target sm_90a" in ptx
    index = (dump / "index.txt").read_text().splitlines()  # which specialization each numbered file holds
    stems = {p.name.split(".")[0] for p in dump.glob("*.ptx")}
    assert len(index) == len(stems) == len(kernels)
    for line in index:
        stem, arch = line.split()[:2]
        assert stem in stems and arch == "sm_90a" and "num_warps=" in line
    assert any("BLOCK_SIZE=" in line for line in index), index


def test_human_output_names_the_failing_rung(tmp_path):
    """The ladder as a user reads it, on a kernel that fails at the run rung."""
    result = evolve("eval", SOFTMAX / "solutions" / "wrong" / "wrong_dtype.py", SOFTMAX, "--cache-dir", tmp_path)
    assert result.returncode == 1
    assert "[run]         FAILED" in result.stdout and "output dtype float32, expected bfloat16" in result.stdout


def test_bad_arguments_get_one_line_and_exit_2(tmp_path):
    """Each of these once ran, or ended in a traceback: every one must be refused up front, with a reason."""
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "problem.toml").write_text("garbage = [\n")
    cases = [
        (("best", tmp_path / "bad", "--db", tmp_path / "x.db"), "not valid TOML"),
        (("best", SOFTMAX, "--export", tmp_path / "missing" / "best.py"), "does not exist"),
        (("run", SOFTMAX, "--db", tmp_path / "no" / "such" / "x.db", "--device", "cpu"), "does not exist"),
        (("run", SOFTMAX, "--max-candidates", "0"), "--max-candidates"),
        (("run", SOFTMAX, "--max-candidates", "-1"), "--max-candidates"),
        (("run", SOFTMAX, "--budget", "0"), "not positive"),
        (("run", SOFTMAX, "--islands", "0"), "--islands"),
        (("run", SOFTMAX, "--tune-share", "1.5"), "--tune-share"),
        (("eval", SOFTMAX / "seeds" / "softmax_rows.py", SOFTMAX, "--timeout", "0"), "--timeout"),
        (("run", SOFTMAX, "--device", "cpu", "--gpus", "0,1"), "no GPU is visible"),
        (("run", SOFTMAX, "--fair-window", "soon"), "--fair-window"),
        (("run", SOFTMAX, "--cluster-lanes", "2"), "--cluster-lanes needs --cluster"),
        (("run", SOFTMAX, "--per-gpu", "0"), "--per-gpu"),
        (("run", SOFTMAX, "--per-gpu", "many"), "give 'auto' or a number"),
        (("run", SOFTMAX, "--cluster", "auto", "--per-gpu", "2"), "a cluster lane is one GPU each"),
    ]
    for args, fragment in cases:
        result = evolve(*args, cwd=tmp_path, timeout=120)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert fragment in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
    assert not (tmp_path / "no").exists()


def test_cpu_interpreter_times_are_labelled_and_carry_no_rates():
    """Interpreter times measure interpreter work: every line that shows one says so, and no rate or speed-up
    (which swing by 100x between runs there) is printed beside it. A skipped rung says why once."""
    from evolve.harness import RungResult, Verdict
    from evolve.render import ladder_lines, shape_table

    def verdict(rungs=(), shapes=()):
        return Verdict(problem="softmax", candidate="c.py", mode="cpu", device="cpu", rungs=tuple(rungs),
                       shapes=tuple(shapes))

    shapes = [{"case": "fp32 64x1024", "ms": 184.2, "clock": "cpu-interpreter", "bytes_per_s": 2.8e6,
               "speedup_vs_torch": 0.0003, "roofline_fraction": None}]
    rungs = [RungResult("benchmark", "ok", seconds=2.0),
             RungResult("roofline", "skipped", "skipped: an earlier rung failed")]
    lines = ladder_lines(verdict(rungs, shapes))
    assert "CPU interpreter time, not GPU performance" in lines[0]
    assert "MB/s" not in lines[0] and "torch" not in lines[0]
    assert lines[1].split() == ["[roofline]", "skipped", "an", "earlier", "rung", "failed"]
    table = shape_table(verdict(shapes=shapes))
    assert table[0].strip().startswith("CPU interpreter times: not GPU performance")
    assert all("vs torch" not in line and "MB/s" not in line for line in table)
    gpu = shape_table(verdict(shapes=[{**shapes[0], "clock": "cuda-window", "ms": 0.0137, "bytes_per_s": 2.45e12,
                                       "speedup_vs_torch": 1.03, "roofline_fraction": 0.57}]))
    assert "vs torch" in gpu[1] and "2.45 TB/s" in gpu[2]


def test_run_help_groups_its_options_with_a_newcomers_first():
    """`evolve run --help` was 36 options in one list: they come under headings, the few a first run needs first,
    each option once."""
    import click
    from click.testing import CliRunner

    from evolve.cli import cli

    text = CliRunner().invoke(cli, ["run", "--help"], terminal_width=100).output
    lines = text.splitlines()
    headings = [i for i, line in enumerate(lines) if line.endswith(":") and not line.startswith((" ", "Usage"))]
    titles = [lines[i] for i in headings]
    assert titles[0] == "Start here:" and "Options:" not in titles and len(titles) >= 5, titles
    assert "Other options:" not in titles, "an option of evolve run is in no section: add it to RUN_SECTIONS"
    first = "\n".join(lines[headings[0]:headings[1]])
    for option in ("--model", "--api-base", "--budget", "--max-candidates", "--device", "--db", "--resume", "--help"):
        assert f"  {option} " in first or f", {option} " in first, option
    rows = [line.split()[0].rstrip(",") for line in lines[headings[0]:] if line.startswith("  -")]
    options = [p.opts[0] for p in cli.commands["run"].params if isinstance(p, click.Option)] + ["-h"]
    assert sorted(rows) == sorted(options)  # each option once


def test_the_summary_says_what_was_searched_and_the_best_against_the_seed(tmp_path):
    from types import SimpleNamespace

    from evolve.archive import Archive
    from evolve.cli import _found
    from verdicts import ladder

    archive = Archive(tmp_path / "a.db")
    try:
        run = archive.start_run("softmax", "problems/softmax", {}, "cpu (Triton interpreter)", {})
        made = []
        for proposer, score in (("seed", 0.016), ("solution", 0.011), ("tuner", 0.024), ("tuner", 0.012)):
            cand = archive.add_candidate(run, source=f"x = {len(made)}\n", proposer=proposer)
            made.append(archive.record_verdict(cand.id, ladder(mode="cpu", fitness=None), score))
        summary = SimpleNamespace(run_id=run, best=made[2], seed_best=made[0])
        assert _found(summary, archive) == (
            f"searched 1 seed, 1 correct solution, 2 tuned settings; the best (#{made[2].id}, tuner) is 1.50x as fast "
            f"as the seed (#{made[0].id}) under the interpreter, over the timed shapes (geometric mean)")
        assert _found(SimpleNamespace(run_id=run, best=made[0], seed_best=made[0]), archive).endswith(
            f"nothing beat the seed (#{made[0].id})")
    finally:
        archive.close()


def test_a_command_called_in_process_puts_the_signal_handlers_back():
    """run, bench and eval stop once and cleanly on Ctrl-C or SIGTERM while they run; called in-process (a test, a
    notebook) they leave the caller's handlers as they found them, and a later signal is not ignored."""
    import signal

    from click.testing import CliRunner

    from evolve.cli import cli

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    result = CliRunner().invoke(cli, ["run", str(ROOT / "problems" / "softmax"), "--cluster-lanes", "2"])
    assert result.exit_code == 2 and "--cluster-lanes needs --cluster" in result.output
    assert {sig: signal.getsignal(sig) for sig in before} == before
