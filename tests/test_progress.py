"""What the run's progress view says: its first frame before the run has an id, and a CPU run's lines."""
import io
import shutil
from pathlib import Path

from rich.console import Console

from evolve import profiling
from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig
from evolve.harness import EvalOptions
from evolve.progress import Progress
from evolve.search import Search
from verdicts import ladder

MINI = Path(__file__).resolve().parent / "data" / "mini_softmax"


def frame(progress: Progress) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(progress._render())
    return out.getvalue()


def test_the_first_frame_shows_no_run_id_until_there_is_one(tmp_path):
    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "p.db"))
    archive = Archive(tmp_path / "p.db")
    try:
        progress = Progress(config, archive, stream=io.StringIO())
        first = frame(progress)
        assert "None" not in first and str(MINI) in first
        progress({"kind": "start", "run_id": 7, "resumed": False, "members": 0})
        assert "7  " + str(MINI) in frame(progress)
    finally:
        archive.close()


def test_a_cpu_run_says_cpu_things(tmp_path, monkeypatch):
    """No GPU: the lanes line speaks of the interpreter, not of cards, and nothing is said of a profiler that only a
    GPU run could use."""
    monkeypatch.setattr(profiling, "find_ncu", lambda: None)
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu either way

    def evaluate(path, problem_path, options):
        return ladder(mode="cpu", fitness=None, roofline="skipped",
                      shapes=[{"case": "fp32 4x256", "ms": 60.0, "clock": "cpu-interpreter"}])

    db = tmp_path / "c.db"
    config = RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=1,
                       profile=ProfileConfig(top=2, every=1))
    archive = Archive(db)
    stream = io.StringIO()
    try:
        with Progress(config, archive, stream=stream) as progress:
            search = Search(config, archive, proposer=None, evaluate=evaluate, on_event=progress)
            summary = search.run()
        assert summary.evaluated == 1
    finally:
        archive.close()
        shutil.rmtree(search.work, ignore_errors=True)
    text = stream.getvalue()
    lanes = next(line for line in text.splitlines() if line.startswith("evaluating on"))
    assert "Triton interpreter" in lanes and "card" not in lanes, lanes
    assert "ncu" not in text and "profiling off" not in text, text
    assert summary.audit is not None and "launch audit" not in text, text  # the summary says it, once
