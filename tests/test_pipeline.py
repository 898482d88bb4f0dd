"""The evaluation pipeline with fake lanes (threads standing in for GPUs) and the search over several lanes: order, one
evaluation per card at a time, a faulted lane's candidate queued again, bounded depth, a run that stops when no lane
can evaluate anything, kill -9 and resume, and fair promotion."""
import os
import threading
import time
from pathlib import Path

import pytest

from evolve import pipeline as pl
from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, load_problem
from evolve.proposer import Proposal
from evolve.search import Search
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"  # one seed, no solutions


class FakeLane:
    """A card: evaluations take `seconds`; `faults` of them (by candidate id) fail for the lane's reasons."""

    def __init__(self, name, seconds=0.05, faults=(), probe=True, log=None):
        self.name, self.seconds, self.faults, self._probe = name, seconds, set(faults), probe
        self.log = log if log is not None else []
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def evaluate(self, job):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self.log.append((self.name, job.cand_id, "start", time.monotonic()))
            time.sleep(self.seconds)
            if job.cand_id in self.faults:
                self.faults.discard(job.cand_id)
                raise pl.LaneFault("the harness could not prepare the device before loading the candidate: Xid 79")
            self.log.append((self.name, job.cand_id, "end", time.monotonic()))
            return ladder(fitness=0.5)
        finally:
            with self.lock:
                self.running -= 1

    def probe(self):
        return self._probe

    def reset(self):
        pass


def drain(pipe, n, timeout=20):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        done = pipe.collect(timeout=0.2)
        if done is not None:
            out.append(done)
    return out


def test_one_lane_evaluates_in_submission_order_one_at_a_time(tmp_path):
    lane = FakeLane("gpu0")
    pipe = pl.Pipeline([lane], depth=3, sleep=lambda s: None)
    for i in (1, 2, 3):
        pipe.submit(i, tmp_path / f"{i}.py")
    assert not pipe.room()  # bounded: a fourth waits until one is collected
    with pytest.raises(RuntimeError, match="full"):
        pipe.submit(4, tmp_path / "4.py")
    done = drain(pipe, 3)
    assert [d.cand_id for d in done] == [1, 2, 3]
    assert all(d.verdict is not None and d.lane == "gpu0" for d in done)
    assert lane.most == 1  # the card's one timing lease
    intervals = pipe.busy["gpu0"]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(intervals, intervals[1:]))
    assert pipe.room() and pipe.inside == []
    pipe.close()


def test_two_lanes_share_the_work_and_never_run_two_on_one_card(tmp_path):
    lanes = [FakeLane("gpu0", 0.1), FakeLane("gpu1", 0.1)]
    pipe = pl.Pipeline(lanes, sleep=lambda s: None)
    assert pipe.depth == 2
    began = time.monotonic()
    submitted, collected = 0, []
    while len(collected) < 8:
        while submitted < 8 and pipe.room():
            submitted += 1
            pipe.submit(submitted, tmp_path / f"{submitted}.py")
        done = pipe.collect(timeout=5)
        assert done is not None
        collected.append(done)
    wall = time.monotonic() - began
    assert sorted(d.cand_id for d in collected) == list(range(1, 9))
    assert {d.lane for d in collected} == {"gpu0", "gpu1"}
    assert all(lane.most == 1 for lane in lanes)
    assert wall < 8 * 0.1 * 0.8  # both cards worked at once (8 x 0.1 s one after another would be 0.8 s)
    pipe.close()


def test_a_faulted_lane_requeues_its_candidate_and_comes_back_after_its_check(tmp_path):
    events = []
    lane = FakeLane("gpu0", 0.05, faults={1})
    waits = []
    pipe = pl.Pipeline([lane], depth=2, on_event=events.append, sleep=waits.append)
    pipe.submit(1, tmp_path / "1.py")
    pipe.submit(2, tmp_path / "2.py")
    done = drain(pipe, 2)
    assert [d.cand_id for d in done] == [1, 2]  # first in line again after the fault
    assert all(d.verdict is not None for d in done)  # not lost: evaluated on its second try
    kinds = [e["kind"] for e in events]
    assert "lane_fault" in kinds and "lane_back" in kinds
    fault = next(e for e in events if e["kind"] == "lane_fault")
    assert fault["candidate"] == 1 and fault["lane"] == "gpu0" and fault["requeued"] and "Xid" in fault["reason"]
    assert waits == [pl.PROBE_BACKOFF_S[0]]  # one check, passed
    assert pipe.dead is None
    pipe.close()


def test_an_evicted_evaluation_is_queued_again_without_checking_the_card(tmp_path):
    """Evicted for another evaluation's timing lease on the same card: first in line again, the card not checked,
    the try counted (a candidate evicted on every try comes back without a verdict)."""
    from evolve.harness.parent.lease import Evicted

    class Evicting(FakeLane):
        def __init__(self, *args, evict=(), **kw):
            super().__init__(*args, **kw)
            self.evict = list(evict)

        def evaluate(self, job):
            if job.cand_id in self.evict:
                self.evict.remove(job.cand_id)
                raise Evicted("stopped and evicted so that another evaluation on the card could be timed")
            return super().evaluate(job)

        def probe(self):
            raise AssertionError("an eviction says nothing about the card")

    events, waits = [], []
    lane = Evicting("gpu0.1", 0.02, evict=[1, 3, 3, 3])
    pipe = pl.Pipeline([lane], depth=3, on_event=events.append, sleep=waits.append)
    for cand in (1, 2, 3):
        pipe.submit(cand, tmp_path / f"{cand}.py")
    done = {d.cand_id: d for d in drain(pipe, 3)}
    assert done[1].verdict is not None and done[2].verdict is not None
    assert done[3].verdict is None and "evicted" in done[3].error and f"{pl.MAX_ATTEMPTS} lanes" in done[3].error
    assert waits == []  # no check of the card, no back-off
    assert sum(e["kind"] == "lane_fault" for e in events) == 4
    assert pipe.dead is None
    pipe.close()


def test_a_lane_whose_card_fails_its_checks_retires_and_the_others_go_on(tmp_path):
    events = []
    bad = FakeLane("gpu0", 0.01, faults={1, 2, 3}, probe=False)
    good = FakeLane("gpu1", 0.2)
    pipe = pl.Pipeline([bad, good], on_event=events.append, sleep=lambda s: None)
    pipe.submit(1, tmp_path / "1.py")
    pipe.submit(2, tmp_path / "2.py")
    done = drain(pipe, 2)
    assert sorted(d.cand_id for d in done) == [1, 2] and all(d.verdict is not None for d in done)
    assert {d.lane for d in done} == {"gpu1"}
    assert any(e["kind"] == "lane_retired" and e["lane"] == "gpu0" for e in events)
    assert pipe.dead is None  # one lane is left
    pipe.close()


def test_when_every_lane_retires_the_candidates_come_back_without_verdicts(tmp_path):
    lane = FakeLane("gpu0", 0.01, faults={1, 2}, probe=False)
    pipe = pl.Pipeline([lane], depth=2, sleep=lambda s: None)
    pipe.submit(1, tmp_path / "1.py")
    pipe.submit(2, tmp_path / "2.py")
    done = drain(pipe, 2)
    assert sorted(d.cand_id for d in done) == [1, 2]
    assert all(d.verdict is None and d.error.startswith("not evaluated") for d in done)
    assert pipe.dead and "gpu0" in pipe.dead
    assert not pipe.room()
    with pytest.raises(RuntimeError, match="no evaluation lane"):
        pipe.submit(3, tmp_path / "3.py")
    pipe.close()


def test_harness_fault_tells_the_lanes_reasons_from_the_candidates():
    assert pl.harness_fault(ladder(fitness=0.5)) is None
    assert pl.harness_fault(ladder(failed="compile")) is None  # the candidate's own failure
    from dataclasses import replace

    from evolve.harness import RungResult

    broken = ladder(failed="load")
    rungs = (RungResult("load", "failed", "the harness could not prepare the device before loading the candidate: "
                                          "CUDA error: unknown error"),) + broken.rungs[1:]
    assert pl.harness_fault(replace(broken, rungs=rungs)).startswith("the harness could not prepare")
    # the same words after the measurer's set-up came from the runner, once the candidate could run: its failure
    loaded = replace(broken, rungs=rungs, setup=({"mode": "gpu", "prepare_s": 2.5},))
    assert pl.harness_fault(loaded) is None
    rungs = (RungResult("load", "failed", "import failed: SyntaxError"),) + broken.rungs[1:]
    assert pl.harness_fault(replace(broken, rungs=rungs)) is None


def test_parse_gpus():
    assert pl.parse_gpus("0,1") == ["0", "1"]
    assert pl.parse_gpus(" 1 , 3 ") == ["1", "3"]
    assert pl.parse_gpus("all") is None and pl.parse_gpus(None) is None
    assert pl.parse_gpus("GPU-09d7f587-4d62-30c3-c2ab-3c037631954a") == ["GPU-09d7f587-4d62-30c3-c2ab-3c037631954a"]
    with pytest.raises(ValueError, match="twice"):
        pl.parse_gpus("0,0")
    with pytest.raises(ValueError, match="indices or UUIDs"):
        pl.parse_gpus("first")


# -- the search over several lanes ----------------------------------------------------------------------------------
class Instant:
    concurrency = 1

    def __init__(self, source):
        self.source, self.n = source, 0

    def propose(self, template, context, parent_source=None, toolbox=None):
        self.n += 1
        return Proposal(self.source + f"\n_VARIANT = {self.n}\n", None, template, "instant", "", "", 0, 0, 0.0, 0.0, 1)


def _config(tmp_path, **kw):
    base = dict(problem_dir=str(ROOT / "problems" / "softmax"), db=str(tmp_path / "a.db"), max_candidates=8,
                search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                eval=EvalOptions(device="cpu"), profile=ProfileConfig(top=0), retime_top=0, artifacts=False,
                gpus=("0", "1"))
    base.update(kw)
    return RunConfig(**base)


def test_a_search_on_two_lanes_evaluates_each_candidate_once_on_its_lanes_card(tmp_path):
    seen, lock = [], threading.Lock()

    def evaluate(path, problem, options):
        with lock:
            seen.append((options.gpu, Path(path).name))
            threads.add(options.threads)
        time.sleep(0.1)
        return ladder(fitness=0.5)

    threads = set()

    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    events = []
    archive = Archive(tmp_path / "a.db")
    summary = Search(_config(tmp_path), archive, Instant(seed), evaluate=evaluate, on_event=events.append).run()
    assert summary.evaluated == 8 and summary.stop_reason == "--max-candidates 8 evaluated"
    names = [name for _, name in seen]
    assert len(names) == len(set(names)) == 8  # each once: none lost, none twice
    assert {gpu for gpu, _ in seen} == {"0", "1"}
    assert threads == {max(1, len(os.sched_getaffinity(0)) // 2)}  # the two lanes' evaluations split the host's cores
    lanes = next(e for e in events if e["kind"] == "lanes")
    assert lanes["lanes"] == ["gpu0", "gpu1"]
    assert {e["lane"] for e in events if e["kind"] == "candidate"} == {"gpu0", "gpu1"}
    assert all(c.status == "evaluated" for c in archive.candidates(summary.run_id))


def test_proposals_are_asked_ahead_but_never_more_than_the_concurrency(tmp_path):
    """Model calls run ahead of the lanes (bounded prefetch): at most --concurrency at once, and at the stop no more
    than that many answers are left unevaluated (tokens a stop wastes)."""
    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    state = {"now": 0, "peak": 0, "calls": 0}
    lock = threading.Lock()

    class Slow(Instant):
        concurrency = 2

        def propose(self, *args, **kwargs):
            with lock:
                state["now"] += 1
                state["calls"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.05)
            with lock:
                state["now"] -= 1
            return super().propose(*args, **kwargs)

    def evaluate(path, problem, options):
        time.sleep(0.02)
        return ladder(fitness=0.5)

    archive = Archive(tmp_path / "a.db")
    summary = Search(_config(tmp_path, max_candidates=10), archive, Slow(seed), evaluate=evaluate).run()
    assert summary.evaluated == 10
    assert 2 == state["peak"]  # ahead of need, and bounded
    llm = [c for c in archive.candidates(summary.run_id) if c.proposer == "llm"]
    assert len(llm) >= 5 and state["calls"] - len(llm) <= Slow.concurrency  # answers asked for, never evaluated


def test_a_run_whose_harness_cannot_evaluate_stops_and_keeps_the_candidates_pending(tmp_path):
    def evaluate(path, problem, options):
        broken = ladder(failed="load")
        from dataclasses import replace

        from evolve.harness import RungResult

        return replace(broken, rungs=(RungResult("load", "failed", "the harness could not prepare the device before "
                                                                   "loading the candidate: no CUDA GPUs"),)
                       + broken.rungs[1:])

    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    original = pl.PROBE_BACKOFF_S
    pl.PROBE_BACKOFF_S = (0.0,)
    try:
        archive = Archive(tmp_path / "a.db")
        summary = Search(_config(tmp_path, gpus=("0",)), archive, Instant(seed), evaluate=evaluate).run()
    finally:
        pl.PROBE_BACKOFF_S = original
    assert "no evaluation lane is left" in summary.stop_reason or "could not evaluate" in summary.stop_reason
    cands = archive.candidates(summary.run_id)
    assert cands and all(c.status == "pending" for c in cands)  # nothing judged the candidates' fault
    assert summary.evaluated == 0


def test_a_profile_round_with_nothing_to_profile_leaves_the_lanes_busy(tmp_path):
    """The profiler needs the card to itself, so a profile round first lets every evaluation in the pipeline end; a
    round with nothing to profile (profiling off, or the best few profiled already) must not empty the lanes."""
    active, alone, lock = [0], [], threading.Lock()

    def evaluate(path, problem, options):
        with lock:
            alone.append(active[0] == 0)  # this evaluation starts with no other on the lanes
            active[0] += 1
        time.sleep(0.4)
        with lock:
            active[0] -= 1
        return ladder(fitness=0.5)

    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    config = _config(tmp_path, max_candidates=24, gpus=("0", "1", "2", "3"), profile=ProfileConfig(top=0, every=2))
    summary = Search(config, Archive(tmp_path / "a.db"), Instant(seed), evaluate=evaluate).run()
    assert summary.evaluated == 24
    # the material (seed, solutions) goes first, and proposals wait for a parent: from then on, no start is alone
    assert sum(alone[8:]) <= 2, alone  # a round that drains leaves one alone in two



def test_waits_for_the_card_do_not_count_toward_the_budgets_estimate_of_the_next_evaluation(tmp_path):
    """Runs sharing a card wait for each other's turns; the material, all started at once, waits longest. The budget
    stops a run before an evaluation that would end past it, judging by the evaluations so far: their waits for the
    card (the setup's card_wait_s) say nothing of that, and counted, they ended a run with most of its budget left."""
    from dataclasses import replace

    started = []

    def evaluate(path, problem, options):
        started.append(time.monotonic())
        material = len(started) <= 4  # the softmax problem's seed and three solutions
        time.sleep(2.0 if material else 0.05)
        verdict = ladder(fitness=0.5)
        return replace(verdict, setup=({"mode": "gpu", "card_wait_s": 1.95 if material else 0.0},))

    seed = load_problem(ROOT / "problems" / "softmax").seed_files()[0].read_text()
    config = _config(tmp_path, max_candidates=None, budget_s=4.0, gpus=("0", "1", "2", "3"))
    summary = Search(config, Archive(tmp_path / "a.db"), Instant(seed), evaluate=evaluate).run()
    assert "--budget of 4 s used" in summary.stop_reason, summary.stop_reason
    # counting the waits, the typical evaluation took 2 s and the run stopped with its material, 2 s of 4 in
    assert summary.evaluated >= 12, summary.evaluated


DRIVER = """
import sys, time
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
from pathlib import Path
from evolve.archive import Archive
from evolve.config import ProfileConfig, RunConfig, SearchConfig
from evolve.harness import EvalOptions, load_problem
from evolve.search import Search
from test_pipeline import Instant, slow_evaluate
root = Path(sys.argv[1])
config = RunConfig(problem_dir=str(root / "problems" / "softmax"), db=sys.argv[2], max_candidates=8,
                   search=SearchConfig(tune_share=0.0, compose_share=0.0, stagnation=10 ** 6),
                   eval=EvalOptions(device="cpu"), profile=ProfileConfig(top=0), retime_top=0, artifacts=False,
                   gpus=("0", "1"), resume=sys.argv[3] == "resume")
seed = load_problem(root / "problems" / "softmax").seed_files()[0].read_text()
Search(config, Archive(sys.argv[2]), Instant(seed), evaluate=slow_evaluate).run()
"""


def slow_evaluate(path, problem, options):
    time.sleep(0.5)
    return ladder(fitness=0.5, mode="cpu")


def test_kill_9_of_the_driver_with_two_lanes_busy_then_resume_loses_nothing(tmp_path):
    import signal
    import sqlite3
    import subprocess
    import sys

    db = tmp_path / "a.db"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(ROOT), str(db), "new"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    evaluated = 0
    while time.monotonic() < deadline and driver.poll() is None:
        try:
            with sqlite3.connect(db) as con:
                evaluated = con.execute("SELECT count(*) FROM candidates WHERE status = 'evaluated'").fetchone()[0]
        except sqlite3.Error:
            evaluated = 0
        if evaluated >= 3:
            break
        time.sleep(0.05)
    assert driver.poll() is None, driver.stderr.read().decode()[-2000:]
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    archive = Archive(db)
    before = {c.id: c.status for c in archive.candidates()}
    pending = [i for i, status in before.items() if status == "pending"]
    assert pending, "the kill was meant to land with evaluations in flight on both lanes"
    archive.close()
    resumed = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT), str(db), "resume"], capture_output=True,
                             text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    archive = Archive(db)
    after = {c.id: c.status for c in archive.candidates()}
    assert set(before) <= set(after)  # every candidate archived before the kill is still there
    assert all(after[i] == "evaluated" for i in before)  # the ones in flight were evaluated on resume
    assert sum(status == "evaluated" for status in after.values()) == 8


class Drifting:
    """A GPU whose figures drift: the seed measures `first` the first time and `later` afterwards; other sources read
    their fitness from a `_FIT = x` line. Each verdict names the card it was measured on."""

    def __init__(self, first, later):
        self.first, self.later, self.calls = first, later, []

    def __call__(self, path, problem, options):
        from dataclasses import replace

        source = Path(path).read_text()
        fit = next((float(line.split("=")[1]) for line in source.splitlines() if line.startswith("_FIT =")), None)
        if fit is None:
            fit = self.first if not any(c[1] is None for c in self.calls) else self.later
        self.calls.append((Path(path).name, None if "_FIT =" not in source else fit, options.gpu))
        return replace(ladder(fitness=fit), gpu=f"GPU-{options.gpu or 0}")


class Child:
    concurrency = 1

    def __init__(self, source, fit):
        self.source, self.fit = source, fit

    def propose(self, template, context, parent_source=None, toolbox=None):
        return Proposal(self.source + f"\n_FIT = {self.fit}\n", None, template, "model", "", "", 0, 0, 0.0, 0.0, 1)


@pytest.mark.parametrize("later, holds", [(0.7, False), (0.5, True)])
def test_a_win_over_a_best_timed_in_another_run_counts_only_against_its_new_figure(tmp_path, later, holds):
    seed = load_problem(MINI).seed_files()[0].read_text()
    gpu = Drifting(first=0.5, later=later)
    archive = Archive(tmp_path / "a.db")
    first = Search(_config(tmp_path, max_candidates=1, gpus=("0",), problem_dir=str(MINI)), archive, None,
                   evaluate=gpu).run()
    assert first.best.fitness == 0.5
    events = []
    search = Search(_config(tmp_path, max_candidates=1, gpus=("0",), problem_dir=str(MINI)), archive,
                    Child(seed, 0.6), evaluate=gpu, on_event=events.append)
    summary = search.run()
    duel = next(e for e in events if e["kind"] == "duel")
    assert duel["incumbent"].id == first.best.id and duel["candidate"].score == 0.6
    result = next(e for e in events if e["kind"] == "duel_result")
    assert result["figure"] == later and result["holds"] is holds
    # the incumbent was timed again on the challenger's card, after it (the seed's second evaluation)
    assert [c for c in gpu.calls if c[1] is None][1:] == [(f"duel_{duel['candidate'].id}_{first.best.id}.py", None,
                                                           "0")]
    retimed = archive.retimes.of_run(summary.run_id)
    assert [(r["candidate_id"], r["round"], r["figure"]) for r in retimed] == [(first.best.id, 0, later)]
    assert (search.best.id == duel["candidate"].id) is holds  # a win that did not hold leaves the best in place
    assert duel["candidate"].id in search.population.members  # a parent either way
    assert archive.get(first.best.id).fitness == 0.5  # the incumbent's own verdict is untouched


def test_a_failed_retiming_of_the_best_decides_no_duel(tmp_path):
    """A duel once counted the incumbent's failed re-timing as the challenger's win, and a candidate that made its
    neighbours fail (the card's memory taken) won duels so. No figure decides nothing: the best stays."""
    seed = load_problem(MINI).seed_files()[0].read_text()
    gpu = Drifting(first=0.5, later=0.5)
    archive = Archive(tmp_path / "a.db")
    first = Search(_config(tmp_path, max_candidates=1, gpus=("0",), problem_dir=str(MINI)), archive, None,
                   evaluate=gpu).run()

    def sabotaged(path, problem, options):
        verdict = gpu(path, problem, options)
        return ladder(failed="benchmark") if path.name.startswith("duel_") else verdict

    events = []
    search = Search(_config(tmp_path, max_candidates=1, gpus=("0",), problem_dir=str(MINI)), archive,
                    Child(seed, 0.6), evaluate=sabotaged, on_event=events.append)
    search.run()
    result = next(e for e in events if e["kind"] == "duel_result")
    assert result["figure"] is None and result["holds"] is False
    assert search.best.id == first.best.id and result["candidate"].id in search.population.members


def test_a_win_over_a_best_timed_on_the_same_card_moments_ago_needs_no_duel(tmp_path):
    seed = load_problem(MINI).seed_files()[0].read_text()
    gpu = Drifting(first=0.5, later=0.9)
    events = []
    search = Search(_config(tmp_path, max_candidates=2, gpus=("0",), problem_dir=str(MINI)),
                    Archive(tmp_path / "a.db"), Child(seed, 0.6), evaluate=gpu, on_event=events.append)
    search.run()
    assert not [e for e in events if e["kind"] in ("duel", "duel_result")]
    assert search.best.score == 0.6 and len(gpu.calls) == 2  # the seed, then the child: nothing timed again


def test_auto_lanes_per_card_take_what_the_machine_allows():
    """--per-gpu auto: 8 on the H200 machine (16 cores, 128 GiB, a 141 GB card), 6 on an H100 (80 GB); fewer where
    cores, host memory or the card's memory run out first; split between cards; never none."""
    from evolve.pipeline import auto_per_gpu

    assert auto_per_gpu(1, cores=16, host_gib=128, card_gib=139.8) == 8
    assert auto_per_gpu(1, cores=16, host_gib=128, card_gib=79.6) == 6  # an H100: 6 measured faster than 4 and 8
    assert auto_per_gpu(1, cores=64, host_gib=512, card_gib=139.8) == 8  # more measured no faster
    assert auto_per_gpu(2, cores=16, host_gib=128, card_gib=139.8) == 4
    assert auto_per_gpu(1, cores=6, host_gib=128, card_gib=80) == 3
    assert auto_per_gpu(1, cores=16, host_gib=12, card_gib=80) == 3
    assert auto_per_gpu(1, cores=16, host_gib=128, card_gib=24) == 1
    assert auto_per_gpu(4, cores=2, host_gib=8, card_gib=16) == 1
    from evolve.pipeline import lanes_per_card

    assert lanes_per_card(3, True, None) == 3 and lanes_per_card(3, False, None) == 3  # a count is the user's
    assert lanes_per_card("auto", False, ["0", "1"]) == 1  # no card of this machine: one lane
