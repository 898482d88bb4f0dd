"""Lanes on a Ray cluster: a local Ray instance (CPU only) with two lane actors, one of which is killed (SIGKILL) in
the middle of an evaluation; Ray restarts it and retries the evaluation, and the run loses nothing."""
import os
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from evolve.archive import Archive  # noqa: E402
from evolve.config import ProfileConfig, RunConfig, SearchConfig  # noqa: E402
from evolve.harness import EvalOptions, load_problem  # noqa: E402
from evolve.search import Search  # noqa: E402
from test_pipeline import Instant  # noqa: E402 - the proposer that answers at once

ROOT = Path(__file__).resolve().parents[1]
MARKS = "EVOLVE_TEST_MARKS"


def slow_evaluate(path, problem, options):
    """Runs in a lane actor's process: marks its start and end (with its pid) so the test can kill it mid-way."""
    from verdicts import ladder

    marks = Path(os.environ[MARKS])
    (marks / f"{os.getpid()}-{Path(path).stem}.start").write_text("")
    time.sleep(1.0)
    (marks / f"{os.getpid()}-{Path(path).stem}.end").write_text("")
    return ladder(fitness=0.5, mode="cpu")


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory):
    marks = tmp_path_factory.mktemp("marks")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                                       MARKS: str(marks), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}})
    yield marks
    ray.shutdown()


def test_a_run_on_ray_lanes_survives_a_killed_actor(tmp_path, local_ray):
    marks = local_ray
    config = RunConfig(problem_dir=str(ROOT / "problems" / "softmax"), db=str(tmp_path / "a.db"), max_candidates=6,
                       search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                       eval=EvalOptions(device="cpu"), profile=ProfileConfig(top=0), retime_top=0, artifacts=False,
                       cluster="auto", cluster_lanes=2)
    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    archive = Archive(tmp_path / "a.db")
    events = []
    search = Search(config, archive, Instant(seed), evaluate=slow_evaluate, on_event=events.append)
    killed = {}

    def killer():
        """Wait for lane 0's actor to start an evaluation, then SIGKILL its process in the middle of it."""
        pid = ray.get(search_lanes[0].actor.pid.remote())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            started = [p.name for p in marks.glob(f"{pid}-*.start")]
            if started:
                time.sleep(0.3)  # well inside its one-second evaluation
                os.kill(pid, signal.SIGKILL)
                killed.update(pid=pid, candidate=started[0].split("-", 1)[1].removesuffix(".start"))
                return
            time.sleep(0.05)

    search.start()
    search_lanes = search.pipeline.lanes
    assert [lane.name for lane in search_lanes] == ["ray0", "ray1"]
    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    search.start = lambda: None  # already started: run() goes on from here
    summary = search.run()
    thread.join(timeout=5)

    assert killed, "the killer never saw lane 0 start an evaluation"
    assert summary.evaluated == 6 and summary.stop_reason == "--max-candidates 6 evaluated"
    cands = archive.candidates(summary.run_id)
    assert len(cands) == 6 and all(c.status == "evaluated" for c in cands)  # nothing lost, nothing left pending
    # the killed evaluation never ended in the killed process, and its candidate was evaluated all the same
    assert not (marks / f"{killed['pid']}-{killed['candidate']}.end").exists()
    assert any(p.name.endswith(f"-{killed['candidate']}.end") for p in marks.glob("*.end"))
    new_pid = ray.get(search_lanes[0].actor.pid.remote())
    assert new_pid != killed["pid"]  # Ray restarted the actor
    assert archive.run(summary.run_id)["device"] == "cpu (Triton interpreter)"
