"""Selection against timing noise, on a real archive: a near-tie keeps the incumbent, in the loop and in the summary."""
import shutil
from pathlib import Path

from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions, RungResult, Verdict
from verdicts import ladder
from evolve.harness.parent.ladder import _roofline
from evolve.population import NOISE_CEILING, NOISE_FLOOR
from evolve.scoring import noise_of
from evolve.search import Search

MINI = Path(__file__).resolve().parent / "data" / "mini_softmax"


def verdict(fitness: float, noise: float = NOISE_FLOOR) -> Verdict:
    """A passing verdict whose timing windows spread by `noise` (the measurer's per-shape `spread`)."""
    shapes = tuple({"case": f"fp32 {n}x1024", "ms": 0.1, "spread": noise * k}
                   for n, k in ((1, 0.5), (2, 1.0), (3, 3.0)))
    return ladder(fitness=fitness, shapes=shapes)


def admit(search: Search, fitness: float, n: int, noise: float = NOISE_FLOOR) -> int:
    cand = search.archive.add_candidate(search.run_id, source=f"def custom_kernel(x):\n    return x * {n}\n",
                                       proposer="tuner")
    done = search.archive.record_verdict(cand.id, verdict(fitness, noise), fitness)
    search.admit(done, noise_of(search.archive.verdict(done.id)))
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


def test_a_restarted_search_judges_near_ties_with_the_noise_measured_before(tmp_path):
    db = str(tmp_path / "b.db")
    config = RunConfig(problem_dir=str(MINI), db=db, eval=EvalOptions(device="cpu"))
    first = Search(config, Archive(db))
    first.start()
    incumbent = admit(first, 0.700, 1, noise=0.05)
    admit(first, 0.700 * 1.03, 2, noise=0.05)  # 3% higher, inside the 5% noise both were measured with
    assert first.best.id == incumbent
    first.archive.close()
    shutil.rmtree(first.work, ignore_errors=True)

    again = Search(config, Archive(db))
    again.start()  # what --resume and every later run of the problem do: re-admit the archive
    assert again.best.id == incumbent
    again.archive.close()
    shutil.rmtree(again.work, ignore_errors=True)


def test_the_budget_stops_before_an_evaluation_that_would_overrun_it(tmp_path):
    now = [1000.0]
    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"),
                       budget_s=300.0, default_budget=True)
    search = Search(config, Archive(tmp_path / "a.db"), clock=lambda: now[0])
    search.start()
    assert search.stop_reason() is None
    now[0] += 200  # 200 s in, evaluations so far took 60 s: the next one ends at about 260 s
    search.eval_seconds = [50.0, 60.0, 70.0]
    assert search.stop_reason() is None
    search.eval_seconds.append(120.0)  # now the typical one (65 s) ends at 265 s: still inside
    assert search.stop_reason() is None
    now[0] += 50  # 250 s in: the next would end past 300 s
    reason = search.stop_reason()
    assert reason.startswith("the default budget without a GPU of 5 min used") and "--resume" in reason
    search.archive.close()
    shutil.rmtree(search.work, ignore_errors=True)


def test_the_noise_is_the_spread_the_measurer_reports_carried_through_the_roofline():
    """The benchmark rung's rows (as the measurer writes them: time, bytes, flops, the windows' spread) become the
    verdict's shapes in the parent; the noise is the median of their spreads, held between the floor and ceiling."""
    peaks = {"bandwidth": 4.0e12, "flops": {"float32": 5.0e13, "bfloat16": 7.0e14, "float16": 7.0e14}}

    def noise(spreads):
        rows = [{"case": f"fp32 {n}x4096", "shape": [n, 4096], "dtype": "float32", "ms": 0.05,
                 "bytes": 2 * n * 4096 * 4, "flops": 5 * n * 4096, "spread": s, "clock": "cuda-window"}
                for n, s in zip((512, 1024, 2048), spreads)]
        roofline, shapes, fitness = _roofline(RungResult("benchmark", "ok", metrics={"shapes": rows}), peaks, "gpu")
        assert roofline.ok and fitness is not None
        return noise_of(ladder(fitness=fitness, shapes=shapes))

    assert noise([0.01, 0.04, 0.06]) == 0.04
    assert noise([0.001, 0.002, 0.003]) == NOISE_FLOOR
    assert noise([0.3, 0.5, 0.9]) == NOISE_CEILING


def test_the_problems_own_kernels_are_not_timed_again_on_a_machine_that_has_their_verdicts(tmp_path):
    """A new archive on a machine that has evaluated the seed alike before records the kept verdict and spends no
    evaluation on it; a changed option (another time limit) or a changed source is evaluated anew."""
    from dataclasses import replace

    calls = []

    def evaluate(path, problem, options):
        calls.append(Path(path).read_text())
        return ladder(fitness=0.5)

    events = []
    options = EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache"))

    def run(db, opts=options):
        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / db), eval=opts, max_candidates=1, retime_top=0,
                           artifacts=False)
        archive = Archive(tmp_path / db)
        try:
            summary = Search(config, archive, evaluate=evaluate, on_event=events.append, known_material=True).run()
            return archive.candidates(summary.run_id)
        finally:
            archive.close()

    first = run("a.db")
    assert len(calls) == 1 and first[0].proposer == "seed" and first[0].score is not None
    second = run("b.db")
    assert len(calls) == 1, "the seed was evaluated again"
    assert second[0].proposer == "seed" and second[0].score == first[0].score and second[0].status == "evaluated"
    assert [e["known"] for e in events if e["kind"] == "candidate"] == [False, True]
    run("c.db", replace(options, timeout_s=60.0))
    assert len(calls) == 2


def test_kept_material_verdicts_bring_the_compiler_output_the_archive_stored(tmp_path, monkeypatch):
    """A run that keeps compiler output (the default) takes a kept verdict with the files stored with it; a verdict
    kept by a run that kept none is evaluated anew there; the oldest kept output goes once over the byte budget."""
    from evolve import known

    calls = []

    def evaluate(path, problem, options):
        calls.append(options.dump_dir)
        if options.dump_dir is not None:  # where the run keeps compiler output
            Path(options.dump_dir).mkdir(parents=True, exist_ok=True)
            (Path(options.dump_dir) / "k.ptx").write_bytes(b".target sm_90a\n" + bytes(len(calls)))
        return ladder(fitness=0.5)

    def run(db, cache, artifacts=True):
        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / db), max_candidates=1, retime_top=0,
                           eval=EvalOptions(device="cpu", cache_dir=str(tmp_path / cache)), artifacts=artifacts)
        archive = Archive(tmp_path / db)
        try:
            summary = Search(config, archive, evaluate=evaluate, known_material=True).run()
            seed = archive.candidates(summary.run_id)[0]
            return seed, archive.artifacts.files(seed.id)
        finally:
            archive.close()

    first, files = run("a.db", "one")
    assert len(calls) == 1 and files == {"k.ptx": b".target sm_90a\n\0"}
    second, again = run("b.db", "one")
    assert len(calls) == 1, "the seed was evaluated again"
    assert again == files and second.score == first.score

    run("c.db", "two", artifacts=False)  # kept without compiler output
    assert len(calls) == 2
    _, fresh = run("d.db", "two")  # so a run that keeps it evaluates the seed itself, and keeps what it made
    assert len(calls) == 3 and fresh == {"k.ptx": b".target sm_90a\n" + bytes(3)}
    assert run("e.db", "two")[1] == fresh and len(calls) == 3

    zips = tmp_path / "one" / known.FOLDER
    (older,) = zips.glob("*.zip")
    monkeypatch.setattr(known, "MAX_ARTIFACT_BYTES", older.stat().st_size + 1)
    known.keep(tmp_path / "one", "another", ladder(fitness=0.4), {"x.ptx": b"y" * 10})
    assert not older.exists() and (zips / "another.zip").exists()
    assert known.recall(tmp_path / "one", "another", with_artifacts=True).artifacts == {"x.ptx": b"y" * 10}


def test_a_bench_cells_budget_leaves_out_the_material(tmp_path):
    """Every cell of a bench evaluates the same material (or takes its kept verdicts): its seconds count against no
    model's budget, so the first cell of a problem gets as much search as the ones after it."""
    now = [0.0]

    def evaluate(path, problem, options):
        now[0] += 100.0
        return ladder(fitness=0.5 + len(Path(path).read_text()) % 7 / 100)

    def run(db, bench):
        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / db), retime_top=0, budget_s=150.0,
                           eval=EvalOptions(device="cpu", cache_dir=str(tmp_path / f"{db}.cache")), isolated=True,
                           bench={"name": "b"} if bench else None)
        archive = Archive(tmp_path / db)
        try:
            summary = Search(config, archive, evaluate=evaluate, clock=lambda: now[0]).run()
            return [c.proposer for c in archive.candidates(summary.run_id)]
        finally:
            archive.close()

    assert run("plain.db", bench=False) == ["seed", "tuner"]  # 200 s: the budget is spent
    assert run("cell.db", bench=True) == ["seed", "tuner", "tuner"]  # 100 s of material left out


def test_kept_material_verdicts_are_used_only_where_runners_cannot_write_the_cache(tmp_path, monkeypatch):
    """Without Landlock a runner could write the cache folder, so a kept verdict there could be the candidate's."""
    from evolve.harness import jail

    def search():
        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu"))
        return Search(config, Archive(tmp_path / "a.db"))

    monkeypatch.setattr(jail, "abi_version", lambda: 0)
    assert not search().strategies["material"].keep_verdicts
    monkeypatch.setattr(jail, "abi_version", lambda: 6)
    assert search().strategies["material"].keep_verdicts


def test_a_fault_of_evolves_own_closes_the_run_and_names_itself(tmp_path):
    """An exception out of the search loop (evolve's bug, not a candidate's) ends the run as Ctrl-C does: the run is
    closed in the archive with the fault as its stop reason, the traceback kept beside the archive, and the error
    raised is one a person can act on (--resume)."""
    import pytest

    from evolve.search import SearchFailed

    db = tmp_path / "a.db"
    search = Search(RunConfig(problem_dir=str(MINI), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=2),
                    Archive(db))

    def broken_loop():
        raise RuntimeError("a fault in a search step")

    search._loop = broken_loop
    with pytest.raises(SearchFailed, match="evolve failed: RuntimeError: a fault in a search step; continue with "
                                           "--resume") as failed:
        search.run()
    assert "the traceback is in" in str(failed.value)
    run = Archive(db).runs()[-1]
    assert run["ended"] and run["stop_reason"].startswith("evolve failed: RuntimeError")
    report = tmp_path / f"evolve-crash-run{run['id']}.txt"
    assert "broken_loop" in report.read_text() and not search.work.exists()


def test_lanes_that_would_wait_for_the_first_verdict_tune_the_seed_meanwhile(tmp_path):
    """Two lanes, one seed: while the seed is evaluated the other lane evaluates a setting of its knobs (its parent
    the seed), instead of waiting for the seed's verdict."""
    import threading

    other_started, order, overlapped = threading.Event(), [], []

    def evaluate(path, problem, options):
        source = Path(path).read_text()
        seed = source == (MINI / "seeds" / "softmax_rows.py").read_text()
        order.append("seed" if seed else "other")
        if seed:
            overlapped.append(other_started.wait(10))  # the seed's evaluation lasts until the other lane starts
        else:
            other_started.set()
        return ladder(fitness=0.5 if seed else 0.4)

    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu", per_gpu=2),
                       max_candidates=3, retime_top=0, artifacts=False)
    archive = Archive(tmp_path / "a.db")
    try:
        summary = Search(config, archive, evaluate=evaluate).run()
        cands = archive.candidates(summary.run_id)
    finally:
        archive.close()
    assert overlapped == [True] and order[:2] == ["seed", "other"], order
    seed, tuned = cands[0], cands[1]
    assert seed.proposer == "seed" and tuned.proposer == "tuner" and tuned.parent_ids == (seed.id,), cands
    assert tuned.knobs and seed.score is not None and tuned.score is not None


def test_the_tuner_takes_turns_between_the_best_and_the_kernels_that_lead_a_case(tmp_path):
    """Tuning only the best structure spends a run on the best's own settings; a kernel that is best on some case is
    tuned too (a setting of it may win that case's regime, and the composer dispatch to it there), turn about with
    the best; a kernel that leads nothing waits for them."""
    from evolve.harness import load_problem
    from evolve.knobs import structure_key

    softmax = Path(__file__).resolve().parents[1] / "problems" / "softmax"
    labels = [case.label for case in load_problem(softmax).benchmarks]
    search = Search(RunConfig(problem_dir=str(softmax), db=str(tmp_path / "a.db"), eval=EvalOptions(device="cpu")),
                    Archive(tmp_path / "a.db"))
    search.start()
    search.device = "NVIDIA H200"  # as a GPU run records it (on the interpreter, launch options are not tuned)
    search.strategies["tuner"].tuner.ignored = frozenset()

    def admit_file(path: str, figures: dict) -> str:
        source = (softmax / path).read_text()
        cand = search.archive.add_candidate(search.run_id, source=source, proposer="solution")
        shapes = tuple({"case": label, "ms": 0.1, "roofline_fraction": figures.get(label, figures["rest"]),
                        "spread": NOISE_FLOOR} for label in labels)
        fitness = sum(s["roofline_fraction"] for s in shapes) / len(shapes)
        done = search.archive.record_verdict(cand.id, ladder(fitness=fitness, shapes=shapes), fitness)
        search.admit(done, NOISE_FLOOR)
        return structure_key(source)

    best = admit_file("seeds/softmax_rows.py", {"rest": 0.80, labels[-1]: 0.60})  # 36 settings of its own
    leads_one = admit_file("solutions/correct/multi_row.py", {"rest": 0.70, labels[-1]: 0.90})
    behind = admit_file("solutions/correct/online_chunks.py", {"rest": 0.50})
    launched = []
    search._launch = lambda cand, then: launched.append(cand)  # archived; evaluating them is not this test's part
    for _ in range(6):
        assert search.step("tuner", 0)
    tuned = [structure_key(c.source) for c in launched]
    assert all(c.proposer == "tuner" for c in launched)
    assert tuned[:2] == [best, leads_one] and tuned.count(best) == tuned.count(leads_one) == 3, tuned
    assert behind not in tuned
    search.archive.close()
    shutil.rmtree(search.work, ignore_errors=True)


def test_a_tuned_setting_gets_a_few_times_its_parents_evaluation_and_never_more_than_the_limit(tmp_path):
    """A setting tuned from a kernel this run evaluated is held to TUNED_TIMES its parent's evaluation (at least
    TUNED_MIN_S): 2 warps on softmax's widest rows compiled for over 180 s and held the card all that while. The
    problem's own kernels, and settings of a parent evaluated elsewhere, keep --timeout."""
    from dataclasses import replace

    from evolve.pipeline import Job
    from evolve.strategies.tuning import TUNED_MIN_S, TUNED_TIMES, tuned_limit

    limits = {}

    def evaluate(path, problem, options):
        limits["seed" if "KNOBS" in Path(path).read_text() and not limits else "tuned"] = options.timeout_s
        return ladder(fitness=0.5 if len(limits) == 1 else 0.4)

    options = EvalOptions(device="cpu", timeout_s=150, cache_dir=str(tmp_path / "cache"))
    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "b.db"), eval=options, max_candidates=2,
                       retime_top=0, artifacts=False)
    archive = Archive(tmp_path / "b.db")  # first, a run that times the seed, and keeps its verdict on this machine
    try:
        assert [c.proposer for c in archive.candidates(Search(config, archive, evaluate=evaluate,
                                                              known_material=True).run().run_id)] == ["seed", "tuner"]
    finally:
        archive.close()
    assert limits == {"seed": 150, "tuned": TUNED_MIN_S}  # the seed's evaluation took well under 20 s
    limits.clear()
    limits["seed"] = None  # the seed's kept verdict is taken: a setting of it is held all the same
    config = replace(config, db=str(tmp_path / "a.db"))
    archive = Archive(tmp_path / "a.db")
    try:
        search = Search(config, archive, evaluate=evaluate, known_material=True)
        summary = search.run()
        cands = archive.candidates(summary.run_id)
        assert [c.proposer for c in cands] == ["seed", "tuner"], cands
        assert limits == {"seed": None, "tuned": TUNED_MIN_S}
        search.lane_seconds[cands[0].id] = 40.0
        assert tuned_limit(search.lane_seconds.get(cands[0].id)) == 40.0 * TUNED_TIMES == 120.0
        search.lane_seconds[cands[0].id] = 70.0  # 210 s: held to --timeout
        search.time_limits[99] = tuned_limit(search.lane_seconds.get(cands[0].id))
        assert search._options(Job(99, Path("x.py"), 0), None).timeout_s == 150
        assert tuned_limit(search.lane_seconds.get(12345)) is None  # not evaluated by this process
    finally:
        archive.close()

    # A parent whose kernels were restored from a kept compile took no compile time: its settings, compiled from
    # scratch, keep --timeout (a TileLang seed's first compile takes minutes, its restored evaluation seconds).
    from dataclasses import replace as replace_field

    def restored(path, problem, options):
        limits["seed" if "KNOBS" in Path(path).read_text() and not limits else "tuned"] = options.timeout_s
        verdict = ladder(fitness=0.5 if len(limits) == 1 else 0.4)
        return replace_field(verdict, setup=({"mode": "gpu", "compiled_restored": 3},))

    limits.clear()
    config = replace(config, db=str(tmp_path / "c.db"), eval=replace(options, cache_dir=str(tmp_path / "other")))
    archive = Archive(tmp_path / "c.db")
    try:
        Search(config, archive, evaluate=restored).run()
    finally:
        archive.close()
    assert limits == {"seed": 150, "tuned": 150}
