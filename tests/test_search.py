"""Selection against timing noise, on a real archive: a near-tie keeps the incumbent, in the loop and in the summary."""
import shutil
from pathlib import Path

from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.search import NOISE_FLOOR, Search

MINI = Path(__file__).resolve().parent / "data" / "mini_softmax"


def verdict(fitness: float) -> dict:
    return {"ok": True, "fitness": fitness, "score": fitness, "rungs": [], "shapes": []}


def admit(search: Search, fitness: float, n: int) -> int:
    cand = search.archive.add_candidate(search.run_id, source=f"def custom_kernel(x):\n    return x * {n}\n",
                                       proposer="tuner")
    done = search.archive.record_verdict(cand.id, verdict(fitness))
    search.noise[done.id] = NOISE_FLOOR
    search._admit(done)
    return done.id


def test_a_near_tie_is_not_an_improvement(tmp_path):
    search = Search(RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu")),
                    Archive(tmp_path / "a.db"))
    search.start()
    first = admit(search, 0.700, 1)
    tie = admit(search, 0.700 * (1 + NOISE_FLOOR / 2), 2)  # higher, but inside the noise
    assert search.best.id == first
    summary = search.summary("test")
    assert summary.best.id == first and summary.near_tie.id == tie

    better = admit(search, 0.700 * (1 + 3 * NOISE_FLOOR), 3)  # beyond the noise
    assert search.best.id == better
    summary = search.summary("test")
    assert summary.best.id == better and summary.near_tie is None
    search.archive.close()
    shutil.rmtree(search.work, ignore_errors=True)
