"""Nsight Compute profiles: the parser on a real report (saved from an H200: the softmax seed on fp32 4096x4096,
`ncu --clock-control none --csv --page raw` with the sections evolve asks for), the summary and its verdict, and the
whole path of a run's profiling round through the jailed child, with ncu (which needs a GPU) replaced by a script
that writes the saved report where ncu would."""
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig
from evolve.harness import EvalOptions
from evolve.profiling import (Profiler, ReportError, _ncu_problem, choose_case, parse_raw, render, summarize,
                              verdict)
from evolve.config import ModelSpec
from evolve.proposer import LLMProposer, default_prompts
from evolve.search import Search
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "tests" / "data" / "ncu" / "softmax_seed_4096x4096_raw.csv"
MINI = ROOT / "tests" / "data" / "mini_softmax"


def test_the_parser_reads_a_real_report():
    kernels = parse_raw(REPORT.read_text())
    assert len(kernels) == 1
    k = kernels[0]
    assert k["name"] == "softmax_row_kernel"
    assert k["duration_ns"] == 31968  # gpu__time_duration.sum, "31,968" in the report
    assert k["dram_pct"] == pytest.approx(71.13) and k["sm_pct"] == pytest.approx(29.11)
    assert k["l2_hit_pct"] == pytest.approx(50.82)
    assert k["achieved_occupancy_pct"] == pytest.approx(70.14) and k["theoretical_occupancy_pct"] == 75
    assert k["registers"] == 34 and k["block"] == 256 and k["grid"] == 4096
    # blocks per SM allowed by each resource: registers 6, shared memory 14, warps 8, blocks 32 -> registers limit
    assert k["limits"]["registers"] == 6 and k["limiter"] == "registers"
    assert list(k["stalls"]) == ["long_scoreboard", "short_scoreboard", "barrier", "drain"]
    assert k["stalls"]["long_scoreboard"] == pytest.approx(16.45)
    assert "selected" not in k["stalls"]  # the issuing warp, not a wait


def test_the_summary_says_what_bounds_the_kernel():
    kernels = parse_raw(REPORT.read_text())
    summary = summarize(kernels, "memory")
    summary["case"] = "fp32 4096x4096"
    assert summary["verdict"] == "memory-bound by the roofline; DRAM at 71% of peak (29% headroom), SM at 29%"
    text = render(summary)
    assert text.startswith("Nsight Compute on fp32 4096x4096: memory-bound by the roofline")
    assert "softmax_row_kernel: 32.0 us; DRAM 71% of peak, SM 29%, L2 hit 51%" in text
    assert "occupancy 70% achieved of 75% theoretical (limited by registers)" in text
    assert "long scoreboard 16.4" in text and "34 regs/thread, block 256, grid 4096" in text
    # a kernel busy on neither side is latency-bound; a compute-heavy one says so
    idle = [dict(kernels[0], dram_pct=20.0, sm_pct=30.0)]
    assert "neither is busy" in verdict(idle, None)
    busy = [dict(kernels[0], dram_pct=40.0, sm_pct=85.0)]
    assert verdict(busy, "compute") == "compute-bound by the roofline; SM at 85% of peak, DRAM at 40%"


def test_reports_without_a_kernel_and_ncu_errors_are_explained():
    with pytest.raises(ReportError, match="no kernel table"):
        parse_raw("==PROF== Disconnected from process 1\n")
    header = REPORT.read_text().splitlines()
    units_only = "\n".join(line for line in header if not line.startswith('"0"'))
    with pytest.raises(ReportError, match="empty"):
        parse_raw(units_only)
    perm = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    assert "no permission to read the GPU's performance counters" in _ncu_problem(perm)
    assert _ncu_problem("==ERROR== The application returned an error code (1).") is None
    assert _ncu_problem("==ERROR== Failed to prepare kernel for profiling") == "ncu: Failed to prepare kernel for profiling"


def test_the_profiled_case_is_the_one_most_like_the_whole():
    shapes = [{"roofline_fraction": 0.9, "bound_ms": 1.0}, {"roofline_fraction": 0.5, "bound_ms": 2.0},
              {"roofline_fraction": 0.1, "bound_ms": 3.0}]
    assert choose_case(shapes) == 1  # geomean 0.36: 0.5 is nearest in ratio
    assert choose_case([{"roofline_fraction": None}]) is None


def test_without_ncu_or_as_root_profiling_is_off_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu here
    assert Profiler(ncu=None).unavailable == "ncu (Nsight Compute) is not on PATH" or Path("/usr/local/cuda/bin/ncu").exists()
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    profiler = Profiler(ncu=str(fake))
    if os.geteuid() == 0:
        assert "running as root" in profiler.unavailable and "--profile-as-root" in profiler.unavailable
        assert Profiler(ncu=str(fake), allow_root=True).unavailable is None
    else:
        assert profiler.unavailable is None


FAKE_NCU = """#!{python}
# Stands in for ncu (which needs a GPU), where ncu would run: inside the profiler's jail. Writes what it was asked and
# what the jail allowed as ncu-style lines (the parser skips them), then the saved report, where --log-file says.
import sys, os
args = sys.argv[1:]
lines = ["==PROF== args: " + " ".join(args)]
try:
    open({outside!r}, "w").write("escaped")
    lines.append("==PROF== wrote outside")
except OSError as exc:
    lines.append(f"==PROF== outside refused: {{exc.errno}}")
with open(args[args.index("--log-file") + 1], "w") as log:
    log.write("\\n".join(lines) + "\\n" + open({report!r}).read())
"""


def gpu_shapes(*fractions):
    return [{"case": "fp32 4096x1024", "ms": 0.01, "roofline_fraction": f, "bound_ms": 0.008, "bytes_per_s": 3e12,
             "speedup_vs_torch": 1.5, "speedup_vs_compile": 1.2, "spread": 0.01} for f in fractions]


def test_a_run_profiles_its_best_through_the_jailed_child_and_the_next_prompt_carries_it(tmp_path, monkeypatch):
    outside = tmp_path / "outside.txt"
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(FAKE_NCU.format(python=sys.executable, outside=str(outside), report=str(REPORT)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")

    def evaluate(path, problem_path, options):
        return ladder(fitness=0.7, shapes=gpu_shapes(0.7))

    db = tmp_path / "p.db"
    config = RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=1,
                       profile=ProfileConfig(top=2, every=10, as_root=True))
    events = []
    archive = Archive(db)
    try:
        search = Search(config, archive, proposer=None, evaluate=evaluate, on_event=events.append)
        summary = search.run()
        seed = archive.candidates(summary.run_id)[0]
        profile = archive.profile(seed.id)
        assert profile is not None and profile["ok"] == 1, profile
        assert profile["case_label"] == "fp32 4096x1024" and profile["seconds"] > 0
        assert profile["summary"]["kernels"][0]["name"] == "softmax_row_kernel"
        import zlib

        (raw,) = archive._query("SELECT report FROM profiles WHERE candidate_id = ?", [seed.id])[0]
        seen = zlib.decompress(raw).decode()
        assert "--clock-control none" in seen and "--profile-from-start off" in seen and "--page raw" in seen
        assert "outside refused" in seen and not outside.exists()  # ncu's side of the child is jailed too
        assert any(e["kind"] == "profile" and e["result"].ok for e in events)
        assert archive.profiled(search.device) == {seed.id}

        search.profile_step()  # profiled already: nothing more
        assert len(archive._query("SELECT id FROM profiles")) == 1

        context = search.context(seed)
        assert "softmax_row_kernel: 32.0 us; DRAM 71% of peak" in context.parent.profile
        proposer = LLMProposer([ModelSpec("openai/x", 1.0)], default_prompts(), api_base="http://127.0.0.1:9")
        prompt = proposer.render("full_rewrite", context)[1]["content"]
        assert "Profile (Nsight Compute" in prompt and "top stalls" in prompt
    finally:
        archive.close()


def test_evolve_show_prints_the_profile(tmp_path):
    from test_run import evolve

    db = tmp_path / "s.db"
    archive = Archive(db)
    run = archive.start_run("mini_softmax", str(MINI), {}, "NVIDIA H200", {})
    cand = archive.add_candidate(run, source="x = 1\n", proposer="seed")
    archive.record_verdict(cand.id, ladder(fitness=0.7, shapes=gpu_shapes(0.7)), 0.7)
    from evolve.profiling import Result

    kernels = parse_raw(REPORT.read_text())
    archive.store_profile(cand.id, "NVIDIA H200", Result(True, 7.5, "", dict(summarize(kernels, "memory"),
                                                                             case="fp32 4096x1024"), "raw"),
                          "fp32 4096x1024")
    other = archive.add_candidate(run, source="y = 2\n", proposer="seed")
    archive.record_verdict(other.id, ladder(fitness=0.6, shapes=gpu_shapes(0.6)), 0.6)
    archive.store_profile(other.id, "NVIDIA H200", Result(False, 2.0, "ncu: Failed to prepare kernel"), "x")
    archive.close()
    shown = evolve("show", str(cand.id), "--db", db, "--no-prompt")
    assert shown.returncode == 0, shown.stderr
    assert "profile (NVIDIA H200, 7.5 s; advice, not part of the verdict):" in shown.stdout
    assert "memory-bound by the roofline; DRAM at 71% of peak" in shown.stdout
    failed = evolve("show", str(other.id), "--db", db, "--no-prompt")
    assert "profile: none (ncu: Failed to prepare kernel)" in failed.stdout
    assert json.loads(json.dumps(kernels))  # the summary is plain JSON
