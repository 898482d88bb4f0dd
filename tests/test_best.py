"""`evolve best` as a user reads it: the kernel's source on stdout (or in --export FILE), the report beside it, and
never the test header (`# expect: ok`) a problem's solution files start with."""
import sqlite3
from pathlib import Path

import pytest

from evolve.archive import Archive
from test_run import evolve
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
SEED = (MINI / "seeds" / "softmax_rows.py").read_text()
HEADED = "# expect: ok\n" + SEED  # as a problem's solutions/correct file starts


def archive_with(db: Path, source: str) -> int:
    """An archive holding one correct CPU candidate of mini_softmax with this source; its id."""
    archive = Archive(db)
    try:
        run = archive.start_run("mini_softmax", str(MINI), {}, "cpu (Triton interpreter)", {})
        cand = archive.add_candidate(run, source=source, proposer="solution")
        verdict = ladder(mode="cpu", fitness=None, roofline="skipped",
                         shapes=[{"case": "fp32 4x256", "ms": 60.0, "clock": "cpu-interpreter"}])
        archive.record_verdict(cand.id, verdict, 1 / 60.0)
        return cand.id
    finally:
        archive.close()


def stored(db: Path, cand_id: int) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT source FROM candidates WHERE id = ?", [cand_id]).fetchone()[0]


def test_best_without_export_prints_the_source_on_stdout(tmp_path):
    """It used to print the figures and nothing else: neither the source nor where to find it."""
    db = tmp_path / "b.db"
    cand = archive_with(db, HEADED)
    result = evolve("best", MINI, "--db", db, "--no-verify")
    assert result.returncode == 0, result.stderr
    assert result.stdout == SEED  # `evolve best P > best.py` is the kernel file, nothing else
    assert result.stderr.startswith(f"#{cand} from run 1 (solution), score ")
    assert "--export FILE" in result.stderr


def test_exported_source_has_no_test_header_and_the_archive_keeps_it(tmp_path):
    db = tmp_path / "b.db"
    cand = archive_with(db, HEADED)
    out = tmp_path / "best.py"
    result = evolve("best", MINI, "--db", db, "--no-verify", "--export", out)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == SEED and "expect:" not in out.read_text()
    assert result.stdout.startswith(f"#{cand} ") and f"written to {out}" in result.stdout
    assert stored(db, cand) == HEADED


def test_best_names_what_its_run_reported_over_a_near_tie_of_the_highest_score(tmp_path):
    """A run that held its best against a higher figure within the noise, or re-timed another above it, reports that
    kernel; `evolve best` named the highest figure instead, so the run's summary and `evolve best` named two."""
    from evolve.launch_audit import FAILED, Audit

    db = tmp_path / "b.db"
    archive = Archive(db)
    try:
        run = archive.start_run("mini_softmax", str(MINI), {}, "cpu (Triton interpreter)", {})
        ids = []
        for n, ms in ((1, 60.0), (2, 59.5)):  # the second measured 1% faster
            cand = archive.add_candidate(run, source=SEED + f"\n_N = {n}\n", proposer="tuner")
            verdict = ladder(mode="cpu", fitness=None, roofline="skipped",
                             shapes=[{"case": "fp32 4x256", "ms": ms, "clock": "cpu-interpreter"}])
            archive.record_verdict(cand.id, verdict, 1 / ms)
            ids.append(cand.id)
        held, higher = ids
        archive.finish_run(run, "budget", held)
    finally:
        archive.close()
    result = evolve("best", MINI, "--db", db, "--no-verify")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("_N = 1\n")
    assert result.stderr.startswith(f"#{held} from run {run} (tuner)")
    assert f"run {run}'s reported best: #{higher} scored higher" in result.stderr
    archive = Archive(db)
    try:
        assert archive.run(run)["best_id"] == held
        archive.launch_audits.store(held, "cpu (Triton interpreter)", Audit(FAILED, "ran a torch kernel"))
    finally:
        archive.close()
    result = evolve("best", MINI, "--db", db, "--no-verify")  # the run's choice failed its audit: the highest then
    assert result.returncode == 0 and result.stdout.endswith("_N = 2\n"), result.stderr
    assert result.stderr.startswith(f"#{higher} ") and "reported best" not in result.stderr


@pytest.mark.slow
def test_best_reverifies_then_prints_the_source(tmp_path):
    """Re-verified on the CPU: the rungs are reported on stderr as they pass, the source comes on stdout."""
    db = tmp_path / "b.db"
    archive_with(db, HEADED)
    result = evolve("best", MINI, "--db", db, "--device", "cpu")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == SEED
    assert "re-verifying it through the whole ladder" in result.stderr and "[correctness] ok" in result.stderr
