"""Time inside a kernel: the section marks a Triton file carries, the stamps they become (compiled for sm_90a and
assembled by ptxas, without a GPU), the parser of a stamp buffer, the archive, `evolve show`, the prompts, and
`evolve trace` saying what it needs where it cannot run."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evolve import tracing
from evolve.harness.runner import sections
from evolve.archive import Archive
from evolve.profiling import Result

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "problems" / "softmax" / "seeds" / "softmax_rows.py"

MARKED = '''import triton
import triton.language as tl
import cutlass.cute as cute


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    # section: load
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + row * n + start + offs, mask=start + offs < n, other=0.0)  # section: not_a_mark
    # section: store
    tl.store(y_ptr + row, tl.sum(acc))
    # section: end


def host():
    # section: host_code
    return 1


@cute.jit
def other():
    # section: cute_code
    pass
'''


def test_marks_are_comment_lines_inside_triton_jit_functions():
    marks = sections.find(MARKED)
    assert [(m.function, m.name) for m in marks] == [("row_sum_kernel", "load"), ("row_sum_kernel", "store"),
                                                      ("row_sum_kernel", "end")]
    assert [m.line for m in marks] == [9, 14, 16] and all(m.indent == "    " for m in marks)
    seed = sections.find(SEED.read_text())
    assert [m.name for m in seed if m.function == "softmax_looped_kernel"] == ["pass1", "combine", "pass2", "end"]
    with pytest.raises(sections.SectionError, match="does not parse"):
        sections.find("def broken(:\n")
    inside = "import triton\n@triton.jit\ndef k(x):\n    y = max(\n        # section: split\n        x, 1)\n"
    with pytest.raises(sections.SectionError, match="line 5 .split. is inside a statement"):
        sections.find(inside)
    many = "import triton\n@triton.jit\ndef k():\n" + "".join(f"    # section: s{i}\n    x = {i}\n"
                                                           for i in range(sections.MAX_MARKS + 1))
    with pytest.raises(sections.SectionError, match="at most"):
        sections.find(many)


def test_each_mark_becomes_a_stamp_that_compiles_for_sm90_without_a_gpu(tmp_path):
    """The instrumented seed goes through Triton's compiler for sm_90 and ptxas: the inline PTX is valid, and every
    mark of the compiled kernel stores its (clock64, globaltimer) pair once per warp."""
    import importlib.util

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    base = 0x7F00_0000_0000
    marks = sections.find(SEED.read_text())
    traced = tmp_path / "traced.py"
    traced.write_text(sections.instrument(SEED.read_text(), base, marks))
    assert traced.read_text().count("inline_asm_elementwise") == len(marks)
    assert "as tl" in SEED.read_text()  # and a file that names triton.language otherwise is traced alike:
    aliased = sections.instrument(SEED.read_text().replace("as tl", "as language").replace("tl.", "language."), base)
    assert "_evolve_stamp_tl.inline_asm_elementwise" in aliased and " tl." not in aliased
    spec = importlib.util.spec_from_file_location("traced_seed", traced)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", "x_row_stride": "i32", "out_row_stride": "i32",
                 "n_cols": "i32", "CHUNK": "constexpr"}
    kernel = compile(ASTSource(fn=module.softmax_looped_kernel, signature=signature, constexprs={"CHUNK": 4096}),
                     target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    ptx = kernel.asm["ptx"]
    assert len(kernel.asm["cubin"]) > 0
    assert ptx.count("%globaltimer") == 4 and ptx.count("st.global.v2.u64") == 4
    first = [m.name for m in marks].index("pass1")  # the looped kernel's marks are slots 4..7 of 8
    assert str(base + first * sections.SLOT_BYTES) in ptx
    assert str(sections.WARPS) in sections.stamp_ptx(base, 0, len(marks))


def stamp_buffer(marks: int, rows: dict) -> bytes:
    """A stamp buffer laid out as the stamps write it: rows {(cta, warp): [(clock64, globaltimer) per mark]}."""
    stamps = np.zeros((sections.MAX_CTAS, sections.WARPS, marks, 2), dtype=np.uint64)
    for (cta, warp), pairs in rows.items():
        for i, pair in enumerate(pairs):
            if pair is not None:
                stamps[cta, warp, i] = pair
    return stamps.tobytes()


def test_the_parser_sums_sections_per_warp_and_skips_what_a_warp_did_not_reach():
    marks = sections.find(MARKED)  # load -> store -> end
    t0 = 1_700_000_000_000_000_000
    rows = {(0, 0): [(100, t0), (1100, t0 + 500), (1300, t0 + 600)],
            (0, 1): [(100, t0), (2100, t0 + 1000), (2500, t0 + 1200)],
            (1, 0): [(50, t0 + 5000), (3050, t0 + 6500), (3650, t0 + 6800)],
            (2, 3): [(10, t0 + 9000), None, None]}  # reached its first mark only
    summary = tracing.parse(stamp_buffer(3, rows), marks)
    load, store = summary["sections"]
    assert (load["name"], load["warps"], load["cycles_median"], load["ns_median"]) == ("load", 3, 2000.0, 1000.0)
    assert (store["name"], store["warps"], store["cycles_median"]) == ("store", 3, 400.0)
    assert load["share"] == pytest.approx(2000 / 2400) and load["cycles_p10"] <= 2000 <= load["cycles_p90"]
    assert summary["ctas"] == 3 and summary["warps_per_cta"] == 2 and not summary["capped"]
    assert summary["start_spread_ns"] == 9000.0
    text = tracing.render({**summary, "case": "fp32 4x4"})
    assert "row_sum_kernel/load: median 2,000 cycles" in text and "83% of the marked time" in text
    assert "traced call" not in text
    assert "The traced call took 0.565 ms, stamps included" in tracing.render({**summary, "call_ms": 0.5654})
    with pytest.raises(ValueError, match="bytes"):
        tracing.parse(b"\0" * 64, marks)
    with pytest.raises(ValueError, match="no warp recorded"):
        tracing.parse(stamp_buffer(3, {(0, 0): [(1, t0), None, None]}), marks)


def test_a_trace_is_kept_shown_and_given_to_prompts(tmp_path):
    from evolve.prompt_context import Contexts  # noqa: F401 - the prompts read it through profile_text

    db = tmp_path / "evolve.db"
    archive = Archive(str(db))
    run = archive.start_run("softmax", str(ROOT / "problems" / "softmax"), {}, "cpu", {})
    cand = archive.add_candidate(run, source=SEED.read_text(), proposer="seed")
    t0 = 1_700_000_000_000_000_000
    summary = tracing.parse(stamp_buffer(3, {(0, 0): [(0, t0), (900, t0 + 400), (1000, t0 + 450)]}),
                            sections.find(MARKED))
    summary["case"] = "fp32 4096x1024"
    archive.traces.store(cand.id, "NVIDIA H200", Result(True, 2.5, "", summary), "fp32 4096x1024")
    kept = Archive(str(db)).traces.latest(cand.id)
    assert kept["ok"] and kept["summary"]["sections"][0]["cycles_median"] == 900.0
    assert cand.id in archive.traces.attempted("NVIDIA H200") and cand.id not in archive.traces.attempted("cpu")
    shown = subprocess.run([sys.executable, "-m", "evolve.cli", "show", str(cand.id), "--db", str(db),
                            "--no-prompt"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "trace (NVIDIA H200, 2.5 s; advice" in shown.stdout
    assert "row_sum_kernel/load: median 900 cycles" in shown.stdout
    contexts = Contexts.__new__(Contexts)
    contexts.archive = archive
    assert "row_sum_kernel/load" in contexts.profile_text(archive.get(cand.id))


def test_evolve_trace_says_what_it_needs(tmp_path):
    db = tmp_path / "evolve.db"
    archive = Archive(str(db))
    run = archive.start_run("softmax", str(ROOT / "problems" / "softmax"), {}, "cpu", {})
    marked = archive.add_candidate(run, source=SEED.read_text(), proposer="seed")
    unmarked_source = SEED.read_text().replace("# section:", "# part:").replace('"CHUNK": 4096', '"CHUNK": 2048')
    plain = archive.add_candidate(run, source=unmarked_source, proposer="tuner")  # comments alone do not make a new
    # candidate (the archive hashes code without them)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}

    def trace(*args):
        return subprocess.run([sys.executable, "-m", "evolve.cli", "trace", *args, "--db", str(db)],
                              capture_output=True, text=True, timeout=120, env=env)

    unmarked = trace(str(plain.id))
    assert unmarked.returncode == 1 and "no sections marked" in unmarked.stderr
    no_gpu = trace(str(marked.id))
    assert no_gpu.returncode == 1 and "tracing needs a GPU" in no_gpu.stderr
    wrong_case = trace(str(marked.id), "--case", "fp32 3x3")
    assert wrong_case.returncode == 2 and "its cases: fp32 4096x1024" in wrong_case.stderr
    assert Archive(str(db)).traces.latest(marked.id) is None  # nothing stored for a trace that did not run
    softmax = str(ROOT / "problems" / "softmax")
    a_file = subprocess.run([sys.executable, "-m", "evolve.cli", "trace", str(SEED), "--problem", softmax],
                            capture_output=True, text=True, timeout=120, env=env)  # a file, not archived
    assert a_file.returncode == 1 and "tracing needs a GPU" in a_file.stderr
    assert f"tracing {SEED} on fp32 4096x1024" in a_file.stderr
    no_problem = trace(str(SEED))
    assert no_problem.returncode == 2 and "say which problem it solves with --problem DIR" in no_problem.stderr
    neither = trace("nothing_here.py")
    assert neither.returncode == 2 and "neither an archived candidate's id nor a file" in neither.stderr


@pytest.mark.gpu
def test_the_softmax_seed_traced_on_the_card(tmp_path):
    """By hand on a GPU: the looped kernel's sections on 1024x131072, every CTA and warp recorded."""
    tracer = tracing.Tracer(timeout_s=300)
    if tracer.unavailable:
        pytest.skip(tracer.unavailable)
    problem = ROOT / "problems" / "softmax"
    from evolve.harness import load_problem

    labels = [case.label for case in load_problem(problem).benchmarks]
    result = tracer.trace(SEED, problem, labels.index("fp32 1024x131072"), case_label="fp32 1024x131072")
    assert result.ok, result.message
    names = [s["name"] for s in result.summary["sections"]]
    assert names == ["pass1", "combine", "pass2"] and result.summary["ctas"] == 1024
    assert all(s["cycles_median"] > 0 for s in result.summary["sections"]) and result.summary["call_ms"] > 0


def test_a_real_trace_from_an_h100_parses_as_it_did_on_the_card(tmp_path):
    """The softmax seed's stamp buffer as `evolve trace` left it on an H100 (tests/data/traces), parsed here: the
    looped kernel's three sections, every warp of its 1024 CTAs, the figures the card's run printed; then kept in an
    archive and read back."""
    import json
    import zlib

    saved = json.loads((ROOT / "tests/data/traces/softmax_seed_fp32_1024x131072.json").read_text())
    data = zlib.decompress((ROOT / "tests/data/traces/softmax_seed_fp32_1024x131072.bin.z").read_bytes())
    marks = [sections.Mark(function, name, line, "    ") for function, name, line in saved["marks"]]
    summary = tracing.parse(data, marks)
    assert [s["name"] for s in summary["sections"]] == ["pass1", "combine", "pass2"]
    assert summary["ctas"] == 1024 and summary["warps_per_cta"] == 8
    assert all(s["warps"] == 1024 * 8 for s in summary["sections"])
    for mine, theirs in zip(summary["sections"], saved["summary"]["sections"]):
        assert mine["cycles_median"] == theirs["cycles_median"] and mine["ns_median"] == theirs["ns_median"]
    pass2 = summary["sections"][2]
    assert 0.5 < pass2["share"] < 0.7 and pass2["cycles_p10"] < pass2["cycles_median"] < pass2["cycles_p90"]
    archive = Archive(str(tmp_path / "evolve.db"))
    run = archive.start_run("softmax", str(ROOT / "problems" / "softmax"), {}, "NVIDIA H100 80GB HBM3", {})
    cand = archive.add_candidate(run, source=SEED.read_text(), proposer="seed")
    kept = Result(True, 6.0, "", {**summary, "case": "fp32 1024x131072"})
    archive.traces.store(cand.id, "NVIDIA H100 80GB HBM3", kept)
    kept_summary = archive.traces.latest(cand.id)["summary"]
    assert "softmax_looped_kernel/pass2: median 297,096 cycles" in tracing.render(kept_summary)


def test_a_runs_trace_round_takes_only_marked_correct_kernels_and_says_why_it_stops(tmp_path, monkeypatch):
    """The profile round's tracing: a correct marked candidate is chosen, an unmarked or failed one is not; without a
    GPU the round says so once (trace_off) and tracing stays off for the run."""
    from evolve.config import RunConfig
    from evolve.harness import EvalOptions, load_problem
    from evolve.rounds import Rounds

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    archive = Archive(str(tmp_path / "evolve.db"))
    run = archive.start_run("softmax", str(ROOT / "problems" / "softmax"), {}, "cpu", {})
    marked = archive.add_candidate(run, source=SEED.read_text(), proposer="seed")
    unmarked = archive.add_candidate(run, source=SEED.read_text().replace("# section:", "# part:")
                                     .replace('"CHUNK": 4096', '"CHUNK": 2048'), proposer="tuner")
    from dataclasses import replace

    marked, unmarked = (replace(cand, ok=True, fitness=0.7) for cand in (marked, unmarked))  # as ranked after a pass
    events = []
    rounds = Rounds(RunConfig(problem_dir=str(ROOT / "problems" / "softmax"), eval=EvalOptions(device="cpu")),
                    archive, load_problem(ROOT / "problems" / "softmax"), tmp_path, events.append)
    rounds.trace([unmarked], "NVIDIA H200", None)
    assert events == [] and rounds.tracer is None  # nothing marked: no tracer was even made
    rounds.trace([unmarked, marked], "NVIDIA H200", None)
    assert [e["kind"] for e in events] == ["trace_off"] and "needs a GPU" in events[0]["reason"]
    rounds.trace([marked], "NVIDIA H200", None)
    assert rounds.tracer is False and len(events) == 1  # off for the rest of the run, said once


def test_the_traced_child_starts_in_its_jail_without_a_gpu(tmp_path):
    """The trace's child path as far as a machine without a GPU takes it: the launcher makes its namespaces, process 1
    jails itself to the work folder and its own /proc entry and execs the trace target, which stops at the card it
    does not find: exit code 1 with the CUDA error, never the launcher's refusal codes."""
    from test_profiling import ISOLATION

    from evolve.harness.runner.profile import ISOLATION_FAILED, JAIL_FAILED
    from evolve.profiling import run_child

    if ISOLATION is not None:
        pytest.skip(ISOLATION)
    work = tmp_path / "work"
    work.mkdir()
    (work / "candidate.py").write_text(SEED.read_text())
    job = {"candidate": str(work / "candidate.py"), "problem": str(ROOT / "problems" / "softmax"), "case": 0,
           "work": str(work), "seed": 1, "beside": False, "mode": "trace"}
    code = run_child(work, job, 120, None)
    stderr = (work / "stderr").read_text()
    assert code == 1 and code not in (ISOLATION_FAILED, JAIL_FAILED), stderr[-500:]
    assert "trace_target" in stderr and ("CUDA" in stderr or "cuda" in stderr), stderr[-500:]
    assert not (work / "trace.bin").exists()
