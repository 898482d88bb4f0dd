"""One intake and one standing: every verdict lands through the ledger, and the run's summary, `evolve best`'s
choice and the leaderboard name the same kernel when the highest score is only a near tie of the run's best."""
import ast
import shutil
from pathlib import Path

from evolve import leaderboard
from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.population import NOISE_FLOOR
from evolve.search import Search
from evolve.standing import problem_best
from test_search import MINI, admit
from verdicts import ladder

PACKAGE = Path(__file__).resolve().parents[1] / "evolve"


def test_only_the_ledger_writes_a_verdict_into_the_archive():
    """Fresh, kept, a duel's, the archive's own at the start: no module but ledger.py records a verdict."""
    writers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "record_verdict" and path.name != "archive.py":
                writers.add(path.relative_to(PACKAGE).as_posix())
    assert writers == {"ledger.py"}


def test_a_near_tie_is_the_same_kernel_for_the_summary_evolve_best_and_the_leaderboard(tmp_path):
    db = tmp_path / "a.db"
    search = Search(RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu")), Archive(db))
    search.start()
    first = admit(search, 0.700, 1)
    tie = admit(search, 0.700 * (1 + NOISE_FLOOR / 2), 2)  # the highest score, but inside the noise
    summary = search.summary("test")
    assert summary.best.id == first and summary.near_tie.id == tie
    search.archive.finish_run(search.run_id, "test", summary.best.id)  # as Search.run persists it
    assert [c.id if c else None for c in problem_best(search.archive, "mini_softmax")] == [first, tie]
    search.archive.close()
    shutil.rmtree(search.work, ignore_errors=True)
    (row,) = leaderboard.board([db]).rows
    assert row.best_candidate["id"] == first
    reopened = Archive(db)
    assert reopened.runs()[0]["best_score"] == reopened.get(first).score  # `evolve status` shows the same kernel
    reopened.close()


def test_a_kept_verdict_lands_through_the_same_intake_as_a_fresh_one(tmp_path):
    """The problem's own kernel, taken from the machine's kept verdicts, counts toward stagnation and is shown to
    the strategies (the tuner remembers its setting) exactly as one a lane evaluated."""
    evaluations = []

    def evaluate(path, problem, options):
        evaluations.append(Path(path).name)
        return ladder(fitness=0.5)

    options = EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache"))
    for name in ("first", "second"):
        db = tmp_path / f"{name}.db"
        config = RunConfig(problem_dir=str(MINI), db=str(db), eval=options, max_candidates=1, retime_top=0,
                           artifacts=False)
        seen = []
        search = Search(config, Archive(db), evaluate=evaluate, known_material=True, on_event=seen.append)
        search.start()
        assert search.step("material", 0)
        search.drain()
        landed = [e for e in seen if e["kind"] == "candidate"]
        assert len(landed) == 1 and landed[0]["known"] is (name == "second")
        assert search.ledger.evaluated == 1 and search.best is not None
        tuner = search.strategies["tuner"].tuner
        assert tuner.history, "the tuner remembers the seed's setting, kept or fresh"
        search.keep_answered()
        search.archive.close()
        shutil.rmtree(search.work, ignore_errors=True)
    assert len(evaluations) == 1  # the second run took the kept verdict
