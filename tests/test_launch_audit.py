"""The launch audit: the report's parser and the judge on reports written from kernel names ncu lists on the H200
(Triton kernels by their function name, ATen's templates, cuBLAS's sm90_xmma_..._cublas and nvjet_...), the
archive's record, and that a kernel which fails it is never the reported best, exported, or ranked, through the real
selection code, archive and jailed profiler child, with ncu (which needs a GPU) replaced by a script that writes a
saved report where ncu would."""
import gzip
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve import launch_audit
from evolve.archive import Archive
from evolve.archive_schema import MIGRATIONS, migrate
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.launch_audit import (FAILED, NEEDS_GPU, NOT_RUN, PASSED, Audit, Auditor, Launch, allowed_names, judge,
                                 parse_report, source_kernels)
from evolve.search import Search
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "ncu"
HONEST, CUBLAS = DATA / "audit_softmax_seed.csv", DATA / "audit_matmul_cublas.csv"
MINI_SEED = DATA / "audit_mini_softmax_seed.csv"  # the mini problem's seed, audited per call (one case)
MINI = ROOT / "tests" / "data" / "mini_softmax"
SPIN = "at::cuda::<unnamed>::spin_kernel(long)"
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>"
        "(int, T2, T3)")
CUTLASS = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(T1::Params)"


def launches(*names, pid="2"):
    return [Launch(i, pid, n) for i, n in enumerate(names)]


def test_the_parser_reads_every_launch_in_order():
    honest = parse_report(HONEST.read_text())
    assert len(honest) == 14 and [launch.id for launch in honest] == list(range(14))
    assert honest[6].name == SPIN and honest[7].name == "softmax_row_kernel" and honest[7].pid == "2"
    assert honest[0].name.startswith("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4")
    # one row per launch and metric (a second metric) is still one launch each; the raw page reads too
    text = HONEST.read_text()
    doubled = text + "\n".join(line.replace("gpu__time_duration.sum", "dram__bytes.sum")
                               for line in text.splitlines() if line.startswith('"7"'))
    assert len(parse_report(doubled)) == 14
    raw = parse_report((DATA / "softmax_seed_4096x4096_raw.csv").read_text())
    assert [(launch.id, launch.pid, launch.name) for launch in raw] == [(0, "519", "softmax_row_kernel")]
    with pytest.raises(launch_audit.AuditError, match="no kernel table"):
        parse_report("==PROF== Disconnected from process 2\n")


def test_only_its_own_triton_kernels_pass():
    status, reason, seen = judge(parse_report(HONEST.read_text()), {"softmax_row_kernel", "softmax_looped_kernel"})
    assert status == PASSED and "softmax_row_kernel x6" in reason
    assert dict(seen) == {"softmax_row_kernel": 6}  # the inputs' kernels and the markers are not the candidate's

    status, reason, seen = judge(parse_report(CUBLAS.read_text()), {"prepare_kernel"})
    assert status == FAILED and "sm90_xmma_gemm_bf16bf16" in reason and "(cuBLAS)" in reason, reason
    assert dict(seen)["nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNN"] == 2

    def verdict_of(*names, allowed=("my_kernel",)):
        return judge(launches("inputs", SPIN, *names, SPIN), set(allowed))

    assert verdict_of("my_kernel", FILL)[0] == PASSED  # torch.zeros for an accumulator
    assert "1 torch fills" in verdict_of("my_kernel", FILL)[1]
    status, reason, _ = verdict_of("my_kernel", CUTLASS)
    assert status == FAILED and "(CUTLASS)" in reason
    mul = "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, " \
          "at::native::binary_internal::MulFunctor<float>>, std::array<char *, 2>>(int, T2, T3)"
    assert "(ATen (torch))" in verdict_of("my_kernel", mul)[1]  # ATen that computes
    assert "(torch.compile (Inductor))" in verdict_of("triton_poi_fused_mul_0")[1]
    assert "not one it compiled" in verdict_of("other_kernel")[1]
    assert verdict_of(FILL)[1] == "none of its own kernels ran during the calls"
    assert verdict_of()[0] == FAILED
    # a kernel of another process (a child the candidate started) counts wherever it falls in the report
    mixed = launches("inputs", SPIN, "my_kernel", SPIN) + [Launch(9, "3", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n")]
    assert judge(mixed, {"my_kernel"})[0] == FAILED
    # the report must cover the calls: both markers, from the audit's own process
    assert "first marker" in judge(launches("inputs", "my_kernel"), {"my_kernel"})[1]
    assert "did not all finish" in judge(launches("inputs", SPIN, "my_kernel"), {"my_kernel"})[1]
    assert "no kernel at all" in judge([], {"my_kernel"})[1]


def test_each_call_of_a_window_launches_its_own_work():
    """Per case the audit's process marks a warming call, one call alone and four calls queued as a window queues
    them: the four must launch four times what the one did, none of their kernels much longer than alone. A window's
    calls deferred and merged into one launch, or spread over dummy launches, fail; an autotuner's extra launches in
    the warming call do not count."""
    def timed(name, us, pid="2"):
        return (name, us, pid)

    def report(*segments, cases=1):
        rows, ident = [], 0
        for segment in (("inputs",), *segments):
            for item in segment:
                name, us, pid = item if isinstance(item, tuple) else (item, 10.0, "2")
                rows.append(Launch(ident, pid, name, us * 1e3))
                ident += 1
            rows.append(Launch(ident, "2", SPIN, 1e3))
            ident += 1
        return judge(rows, {"k", "pre"}, cases)

    honest = report(["k", "k", "k"], ["pre", "k"], ["pre", "k"] * 4)
    assert honest[0] == PASSED, honest
    jittered = report(["k"], [timed("k", 10)], [timed("k", 9), timed("k", 12), timed("k", 10), timed("k", 19)])
    assert jittered[0] == PASSED, jittered
    merged = report(["k"], [], [timed("k", 31)])  # every call deferred, one launch at the window's end
    assert merged[0] == FAILED and "launched k x1, where one call alone launched nothing" in merged[1], merged
    fused = report(["k"], ["k"], [timed("k", 1), timed("k", 1), timed("k", 1), timed("k", 31)])
    assert fused[0] == FAILED and "3.1x as long as in one call alone" in fused[1], fused
    assert "did not all finish" in report(["k"], ["k"], cases=2)[1]  # a case's markers missing
    two = report(["k"], ["k"], ["k"] * 4, ["k"], ["k"], ["k"] * 3, cases=2)
    assert two[0] == FAILED and "launched k x3, where one call alone launched k x1" in two[1], two
    # a child process's launches count where they fall
    child = report(["k"], ["k"], ["k", "k", "k", timed("k", 10, pid="3")])
    assert child[0] == PASSED, child


def test_the_parser_reads_each_launchs_duration():
    honest = parse_report(HONEST.read_text())
    assert honest[1].ns == 10144.0 and all(launch.ns is not None for launch in honest)
    from evolve.launch_audit import _nanoseconds

    assert _nanoseconds("1.5", "usecond") == 1500.0 and _nanoseconds("2", "msecond") == 2e6
    assert _nanoseconds("n/a", "nsecond") is None and _nanoseconds("3", "furlong") is None


@pytest.mark.parametrize("name", ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
                                  "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNN", "cutlass_gemm", "cudnn_conv",
                                  "ampere_sgemm_128x64_nn", "spin_kernel", "at::native::x", "void f(int)"])
def test_a_kernel_named_like_a_library_cannot_be_whitelisted(name):
    """A candidate that also compiles a dummy Triton kernel of a library kernel's name does not make it allowed."""
    status, reason, _ = judge(launches("inputs", SPIN, name, SPIN), {name, "my_kernel"})
    assert status == FAILED and "named like a library's" in reason


def test_plain_kernel_names_that_merely_resemble_a_library_are_kept():
    for name in ("flatten_kernel", "hopper_matmul_kernel", "gemm_kernel", "fused_attention_fwd"):
        assert judge(launches("inputs", SPIN, name, SPIN), {name})[0] == PASSED, name


def test_what_it_may_launch_is_its_compile_rung_and_its_own_jit_functions():
    source = ("import triton\nfrom triton import jit\n\n@triton.autotune(configs=[], key=[])\n@triton.jit\n"
              "def tuned_kernel(x):\n    pass\n\n@jit\ndef plain_kernel(x):\n    pass\n\n"
              "@triton.jit(do_not_specialize=['n'])\ndef called_kernel(n):\n    pass\n\ndef custom_kernel(x):\n"
              "    return x\n")
    assert source_kernels(source) == {"tuned_kernel", "plain_kernel", "called_kernel"}
    assert source_kernels("def (") == set()
    from dataclasses import replace

    from evolve.harness import RungResult

    base = ladder(fitness=0.7)
    compiled = replace(base, rungs=tuple(RungResult("compile", "ok", None, 0.1, {"kernels": [{"name": "rung_kernel"}]})
                                         if r.name == "compile" else r for r in base.rungs))
    assert allowed_names(compiled, source) == ("called_kernel", "plain_kernel", "rung_kernel", "tuned_kernel")


def test_without_ncu_the_audit_says_it_was_not_run(monkeypatch):
    monkeypatch.setattr("evolve.profiling.find_ncu", lambda: None)
    audit = Auditor().audit("x = 1\n", MINI, ["k"])
    assert audit.status == NOT_RUN and audit.line == "launch audit not run: ncu (Nsight Compute) is not on PATH"


def test_the_archive_keeps_audits_and_older_archives_gain_the_table(tmp_path):
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old, isolation_level=None)
    import sqlite_utils

    migrate(sqlite_utils.Database(conn), [m for m in MIGRATIONS if m.__name__ != "m010_launch_audits"])
    conn.execute("INSERT INTO runs (problem, started) VALUES ('mini_softmax', '2026-01-01T00:00:00')")
    conn.close()
    archive = Archive(old)  # the migration runs on open
    try:
        cand = archive.add_candidate(1, source="y = 2\n", proposer="seed")
        archive.record_verdict(cand.id, ladder(fitness=0.7), 0.7)
        assert archive.launch_audits.get(cand.id) is None and archive.best("mini_softmax").id == cand.id
        kept = Audit(PASSED, "only its own kernels ran", (("softmax_row_kernel", 6),), ("softmax_row_kernel",), 12.5,
                     "csv")
        archive.launch_audits.store(cand.id, "NVIDIA H200", kept)
        row = archive.launch_audits.get(cand.id, "NVIDIA H200")
        assert (row["status"], row["kernels"], row["allowed"], row["seconds"]) == \
            (PASSED, [["softmax_row_kernel", 6]], ["softmax_row_kernel"], 12.5)
        assert launch_audit.from_record(row) == Audit(PASSED, "only its own kernels ran", (("softmax_row_kernel", 6),),
                                                      ("softmax_row_kernel",), 12.5, recorded=True)
        assert archive.launch_audits.get(cand.id, "another card") is None
        archive.launch_audits.store(cand.id, "another card", Audit(FAILED, "cuBLAS ran"))
        archive.launch_audits.store(cand.id, "another card", Audit(NOT_RUN, "ncu is not on PATH"))
        assert archive.launch_audits.get(cand.id)["status"] == FAILED  # a failure is for good, whatever came after
        assert archive.best("mini_softmax") is None and archive.launch_audits.failed() == {cand.id}
        assert archive.runs()[0]["best_score"] is None
    finally:
        archive.close()


FAKE_NCU = """#!{python}
# Stands in for ncu where ncu would run (inside the profiler's namespaces and jail): checks what it was asked and
# where the candidate may write, then writes the saved report of a cuBLAS call for a candidate that says it makes one,
# else the honest softmax's.
import json, os, stat, sys
args = sys.argv[1:]
job = json.load(open(args[-1]))
assert args[-2:-1] == ["audit-target"] and job["mode"] == "audit", args
assert "--clock-control none" in " ".join(args) and "--target-processes all" in " ".join(args)
assert "--profile-from-start" not in args  # profiled from the start: the candidate cannot switch it off
work = job["work"]
assert stat.S_IMODE(os.stat(work).st_mode) == 0o711 and stat.S_IMODE(os.stat(work + "/tmp").st_mode) == 0o1777
assert os.environ["TMPDIR"] == work + "/tmp" and os.environ["HOME"] == work + "/tmp"
assert os.environ["TRITON_CACHE_DIR"].startswith(work + "/tmp/")
report = {cublas!r} if "cublas" in open(job["candidate"]).read() else {honest!r}
with open(args[args.index("--log-file") + 1], "w") as log:
    log.write(open(report).read())
"""

CHEAT = '''"""A softmax by the library, with a dummy Triton kernel so that something compiles (uses cublas)."""
import torch
import triton
import triton.language as tl


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return torch.softmax(x, -1)
'''


def _isolation():
    from test_profiling import ISOLATION

    return ISOLATION


needs_isolation = pytest.mark.skipif(_isolation() is not None, reason=str(_isolation()))


@needs_isolation
def test_a_kernel_that_fails_the_audit_is_never_reported_exported_or_ranked(tmp_path, monkeypatch):
    import tempfile

    folders = Path(tempfile.mkdtemp(prefix="evolve-audit-test-", dir="/tmp"))  # one nobody could reach
    os.chmod(folders, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(folders))  # the audits' work folders are made here
    problem = tmp_path / "mini_softmax"
    shutil.copytree(MINI, problem)
    (problem / "solutions" / "correct").mkdir(parents=True)
    (problem / "solutions" / "correct" / "library.py").write_text(CHEAT)
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, cublas=str(CUBLAS), honest=str(MINI_SEED)))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)

    def evaluate(path, problem_path, options):  # the library call is faster, as it was on the H200
        return ladder(fitness=0.91 if "cublas" in Path(path).read_text() else 0.68)

    db = tmp_path / "a.db"
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=2,
                       retime_top=0)
    events = []
    archive = Archive(db)
    try:
        summary = Search(config, archive, evaluate=evaluate, auditor=Auditor(ncu=str(fake), timeout_s=60),
                         on_event=events.append).run()
        seed, cheat = sorted(archive.candidates(summary.run_id), key=lambda c: c.proposer != "seed")
        assert cheat.proposer == "solution" and cheat.score == pytest.approx(0.91)
        assert summary.best.id == seed.id, summary
        assert summary.audit.status == PASSED and "softmax_row_kernel x6" in summary.audit.line, summary.audit
        ((failed, audit),) = summary.audit_failed
        assert failed.id == cheat.id and audit.status == FAILED and "(cuBLAS)" in audit.reason
        assert archive.best("mini_softmax").id == seed.id
        assert [e["candidate"].id for e in events if e["kind"] == "audit"] == [cheat.id, seed.id]
        assert not list(folders.glob("evolve-audit-*"))  # the work folders are gone
    finally:
        archive.close()
        shutil.rmtree(folders, ignore_errors=True)

    from evolve.cli import _print_summary, cli

    printed = CliRunner().invoke(cli, ["best", str(problem), "--db", str(db), "--no-verify", "--export",
                                       str(tmp_path / "best.py")])
    assert printed.exit_code == 0, printed.output
    assert f"#{seed.id} from run" in printed.output and "launch audit passed" in printed.output
    assert (tmp_path / "best.py").read_text() == seed.source

    from evolve.leaderboard import board

    (row,) = board([db]).rows
    assert row.best_candidate["id"] == seed.id and row.best == pytest.approx(0.68) and row.audit == PASSED

    import click

    lines = []
    monkeypatch.setattr(click, "echo", lambda text="", **_: lines.append(str(text)))
    _print_summary(summary, Archive(db), str(problem))
    text = "\n".join(lines)
    assert f"#{cheat.id} (0.91) is left out: launch audit failed: a kernel it did not compile ran: sm90_xmma" in text
    assert f"best: #{seed.id} fitness 0.680" in text and "  launch audit passed: only its own kernels ran" in text


def test_a_run_on_the_cpu_says_the_audit_needs_a_gpu(tmp_path):
    def evaluate(path, problem_path, options):
        return ladder(fitness=None, mode="cpu", shapes=({"case": "fp32 4x256", "ms": 2.0},))

    db = tmp_path / "c.db"
    archive = Archive(db)
    try:
        summary = Search(RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=1,
                                   retime_top=0), archive, evaluate=evaluate).run()
        assert summary.best is not None and summary.audit == Audit(NOT_RUN, NEEDS_GPU)
        assert summary.audit.line.startswith("launch audit not run: the launch audit needs a GPU")
        assert archive.launch_audits.get(summary.best.id) is None  # nothing to keep: a GPU run audits it
    finally:
        archive.close()


RESTRICTED = """
import os, sys
from pathlib import Path
from evolve.harness.shared.privilege import drop
from evolve.harness.runner.profile import restrict
work = sys.argv[1]
why = restrict(work) or (drop() if os.geteuid() == 0 else None)
assert why is None, why
for name in ("ncu.csv", "refused", "tmp/mine"):
    try:
        open(os.path.join(work, name), "a").write("forged")
        print(name, "written")
    except OSError:
        print(name, "refused")
"""


@pytest.mark.skipif(os.geteuid() != 0 and _isolation() is not None, reason="no Landlock here")
def test_the_candidate_cannot_write_the_report_or_the_refusal():
    """What the audit's target does before it imports the candidate: as root it gives up root (the report and the
    work folder stay root's), as a user it jails itself; either way only tmp/ takes its writes."""
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="evolve-audit-test-", dir="/tmp"))  # reachable by nobody, as the audit's
    try:
        (work / "tmp").mkdir()
        os.chmod(work, 0o711)
        os.chmod(work / "tmp", 0o1777)
        (work / "ncu.csv").write_text("ncu's report\n")
        done = subprocess.run([sys.executable, "-c", RESTRICTED, str(work)], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[:3] == ["ncu.csv refused", "refused refused", "tmp/mine written"]
        assert (work / "ncu.csv").read_text() == "ncu's report\n" and not (work / "refused").exists()
    finally:
        shutil.rmtree(work, ignore_errors=True)


RUNS_THE_TARGET = """#!{python}
# Stands in for ncu: runs the command it was given (the audit's target), as ncu does, and writes an empty log.
import subprocess, sys
args = sys.argv[1:]
log = args.index("--log-file") + 1
subprocess.run(args[log + 1:])
open(args[log], "w").write("==PROF== Disconnected from process 2\\n")
"""


@needs_isolation
def test_a_refusal_before_the_candidate_is_imported_says_the_audit_was_not_run(tmp_path):
    """The target refuses (here: the problem's inputs cannot be made) before the candidate is imported, through the
    one file only harness code can write; the audit is then not run, with the reason, rather than failed or passed."""
    fake = tmp_path / "ncu"
    fake.write_text(RUNS_THE_TARGET.format(python=sys.executable))
    fake.chmod(0o755)
    audit = Auditor(ncu=str(fake), timeout_s=60).audit(CHEAT, tmp_path / "no_such_problem", ["prepare_kernel"])
    assert audit.status == NOT_RUN, audit
    assert audit.reason.startswith("the inputs could not be made (ProblemError"), audit.reason


def test_a_real_report_of_one_case_audited_per_call_passes():
    """Nsight Compute's report of the mini problem's seed on the H200 (benchmarks/launch_audit_check.py): one case,
    its warming call, one call alone and four in a row, each part closed by a marker, every launch timed."""
    launches = parse_report(MINI_SEED.read_text())
    assert sum(1 for launch in launches if "spin_kernel" in launch.name) == 4 and all(launch.ns for launch in launches)
    status, reason, _ = judge(launches, {"softmax_row_kernel"}, cases=1)
    assert status == PASSED and "softmax_row_kernel x6" in reason, reason
    assert "did not all finish" in judge(launches, {"softmax_row_kernel"}, cases=2)[1]


def test_torch_fills_pass_as_this_ncu_names_them_and_aten_that_computes_does_not():
    """A real report from an H100 (cross_entropy, five cases): a composite whose atomic accumulator is torch.zeros.
    That machine's Nsight Compute prints ATen's kernels without "at::" ("void native::...FillFunctor<float>..."); the
    fills pass there as they do under the longer name, and ATen work under the shorter name is still named ATen."""
    text = gzip.decompress((DATA / "audit_cross_entropy_fills_h100.csv.gz").read_bytes()).decode()
    launches = parse_report(text)
    fill = ("void native::vectorized_elementwise_kernel<4, native::FillFunctor<float>, std::array<char *, 1>>"
            "(int, T2, T3)")
    assert sum(1 for launch in launches if launch.name == fill) >= 12
    allowed = {"divide_kernel_c2", "mean_kernel_c13", "row_loss_atomic_kernel_c2", "row_loss_kernel_c13"}
    status, reason, _ = judge(launches, allowed, cases=5)
    assert status == PASSED and "torch fills" in reason, reason
    mul = fill.replace("native::FillFunctor<float>", "native::AUnaryFunctor<float, float, float, "
                       "native::binary_internal::MulFunctor<float>>")
    computes = [Launch(launch.id, launch.pid, mul) if launch.name == fill else launch for launch in launches]
    status, reason, _ = judge(computes, allowed, cases=5)
    assert status == FAILED and "(ATen (torch))" in reason, reason


def test_a_cutedsl_kernel_passes_under_the_names_the_dsl_gives_it_at_every_shape():
    """CuTeDSL names a compiled kernel kernel_cutlass_<@cute.kernel function>_<argument types>_<n>, the types
    changing with the shapes compiled: a candidate's own @cute.kernel function is allowed at any shape, a library's
    kernel is not, however it is named, and another function's name is not either."""
    source = (ROOT / "problems" / "softmax" / "solutions" / "correct" / "cutedsl" / "two_pass_rows.py").read_text()
    allowed = set(allowed_names(None, source))
    assert "kernel_cutlass__softmax_kernel_*" in allowed
    small = "kernel_cutlass__softmax_kernel_tensorptrf32generico1771_tensorptrf32generico1771_0"
    large = "kernel_cutlass__softmax_kernel_tensorptrf32gmemalign16o409640961_tensorptrf32gmemalign16o409640961_0"
    status, reason, _ = judge(launches("inputs", SPIN, small, large, SPIN), allowed)
    assert status == PASSED, reason
    for foreign in ("kernel_cutlass__other_kernel_tensorptrf32_0", CUTLASS, "cutlass_80_tensorop_s1688gemm_64x64",
                    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"):
        status, reason, _ = judge(launches("inputs", SPIN, small, foreign, SPIN), allowed)
        assert status == FAILED and "did not compile" in reason, (foreign, reason)
    status, reason, _ = judge(launches("inputs", SPIN, small, SPIN), allowed | {"kernel_cutlass_cublas_gemm_*"})
    assert status == FAILED and "named like a library" in reason
