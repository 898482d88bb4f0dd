"""Racing the benchmark rung (harness/measurer/race.py): cases timed shortest bound first, timing stopped once a
candidate's best possible fitness is below the run's bar; a kernel that lost is correct with a partial figure and
never ranks. The race itself needs a card's roofline; its arithmetic, the parent's reading and the bar the search
sets are tested here on the CPU."""
import math
import random
from pathlib import Path

import pytest

from evolve.archive import Archive
from evolve.config import RunConfig, SearchConfig
from evolve.harness import EvalOptions, RungResult, load_problem
from evolve.harness.measurer.race import Race
from evolve.harness.shared.formats import reference_for
from evolve.harness.shared.roofline import ROOFLINE_CEILING, best_possible, fitness_of
from evolve.scoring import score_of
from evolve.search import RACE_MARGIN, Search
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = load_problem(ROOT / "problems" / "softmax")
PEAKS = {"bandwidth": 4.0e12, "flops": {"float32": 60e12, "bfloat16": 800e12, "float16": 800e12}}


def race(below: float) -> Race:
    reference = reference_for(SOFTMAX)
    cases = list(SOFTMAX.benchmarks)
    return Race(below, PEAKS, {case.label: reference.profile(case) for case in cases}, cases)


def run(candidate_fractions, below: float) -> tuple[Race, list[str]]:
    """Time the cases in the race's order, each at the candidate's fraction of its bound, until it stops."""
    r = race(below)
    timed = []
    for case in r.order(list(SOFTMAX.benchmarks)):
        timed.append(case.label)
        ms = r.bounds[case.label] * 1e3 / candidate_fractions[case.label]
        if r.lost(case.label, ms):
            break
    return r, timed


def test_the_best_possible_fitness_counts_every_untimed_case_at_the_ceiling():
    assert best_possible([], [], 4) == pytest.approx(ROOFLINE_CEILING)
    assert best_possible([0.5, 0.5], [1, 1], 2) == pytest.approx(math.sqrt(0.5 * ROOFLINE_CEILING))
    assert best_possible([0.2] * 4, [1] * 4, 0) == pytest.approx(0.2)
    # weighted: a case that runs three times as often counts three times
    assert best_possible([0.5], [3], 1) == pytest.approx(math.exp((3 * math.log(0.5) + math.log(ROOFLINE_CEILING)) / 4))
    assert fitness_of([0.5, 0.8], [3, 1]) == pytest.approx(math.exp((3 * math.log(0.5) + math.log(0.8)) / 4))


def test_cases_are_timed_shortest_bound_first():
    r = race(0.5)
    ordered = r.order(list(SOFTMAX.benchmarks))
    assert [r.bounds[c.label] for c in ordered] == sorted(r.bounds.values())
    assert len(ordered) == len(SOFTMAX.benchmarks) >= 4


def test_a_slow_candidate_stops_early_and_says_why():
    labels = [c.label for c in SOFTMAX.benchmarks]
    r, timed = run({label: 0.25 for label in labels}, below=0.6)
    assert len(timed) < len(labels)  # the rest were never timed
    said = r.record()
    assert said["timed"] == len(timed) and said["best_possible"] < said["below"] == 0.6


def test_a_candidate_as_good_as_the_best_is_never_cut_whatever_its_weak_cases():
    """Per case equal to a best of fitness F, its best possible figure never drops below F: the bar (F less noise)
    cannot stop it, however uneven its cases are."""
    rng = random.Random(1)
    labels = [c.label for c in SOFTMAX.benchmarks]
    for _ in range(50):
        fractions = {label: rng.uniform(0.05, 1.0) for label in labels}
        fitness = math.exp(sum(math.log(f) for f in fractions.values()) / len(fractions))
        _, timed = run(fractions, below=fitness * (1 - 0.02))
        assert len(timed) == len(labels)


def raced_verdict():
    bench = RungResult("benchmark", "ok", None, 1.0, {"raced": {"below": 0.6, "best_possible": 0.41, "timed": 3,
                                                                "cases": 10}})
    base = ladder(fitness=None, roofline="skipped")
    return type(base)(**{**base.__dict__, "rungs": tuple(bench if r.name == "benchmark" else r for r in base.rungs)})


def test_a_kernel_that_lost_its_race_is_correct_and_never_ranks():
    verdict = raced_verdict()
    assert verdict.ok and verdict.raced["timed"] == 3
    assert score_of(verdict) is None  # not the interpreter's 1/ms either: a GPU figure ranks by its roofline alone


@pytest.mark.gpu
def test_on_a_card_a_bar_out_of_reach_stops_the_seed_after_its_first_case(tmp_path):
    from evolve.harness import evaluate

    seed = ROOT / "problems" / "softmax" / "seeds" / "softmax_rows.py"
    cut = evaluate(seed, ROOT / "problems" / "softmax", EvalOptions(device="cuda", race_below=1.0))
    whole = evaluate(seed, ROOT / "problems" / "softmax", EvalOptions(device="cuda", race_below=0.01))
    assert cut.ok and cut.fitness is None and cut.raced["timed"] < cut.raced["cases"], cut.raced
    assert len(cut.shapes) == cut.raced["timed"] and "raced out" in cut.rung("roofline").reason
    assert whole.ok and whole.fitness is not None and whole.raced is None


def test_the_search_sets_the_bar_for_a_model_s_candidates_only(tmp_path):
    """Against the best's figure less its noise and the margin; never for the problem's own kernels (their verdicts
    are kept whole), and not at all with race off."""
    from test_agent import MINI, judged

    for race_on in (True, False):
        asked = {}

        def recording(path, problem, options, _asked=asked):
            _asked[Path(path).name] = options.race_below
            return judged(path, problem, options)

        config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / f"r{race_on}.db"), eval=EvalOptions(device="cpu"),
                           max_candidates=6, retime_top=0, artifacts=False, race=race_on,
                           search=SearchConfig(tune_share=1.0, compose_share=0))
        archive = Archive(tmp_path / f"r{race_on}.db")
        summary = Search(config, archive, None, evaluate=recording, known_material=False).run()
        cands = {c.id: c for c in archive.candidates(summary.run_id)}
        bars = {cands[int(name.split("_")[1].split(".")[0])].proposer: bar for name, bar in asked.items()}
        archive.close()
        assert bars["seed"] is None
        expected = 0.5 * (1 - 0.02 - RACE_MARGIN) if race_on else None  # the stand-in's fitness, at the noise floor
        assert bars["tuner"] == (pytest.approx(expected) if race_on else None), bars


def test_the_bar_is_the_best_s_or_a_slower_parent_s(tmp_path):
    """A child of the best races the best's figure; a child of a slower structure races its parent's, so an
    improvement there is still timed whole (and heard by the diversity archive, the bandit and the lessons)."""
    from evolve.population import NOISE_FLOOR, Policy, Population
    from evolve.search import race_bar
    from evolve.strategies import Proposal

    archive = Archive(tmp_path / "a.db")
    run = archive.start_run("softmax", str(ROOT / "problems" / "softmax"), {}, "NVIDIA H200", {}, "triton")
    population = Population(Policy(), random.Random(0))
    members = {}
    for name, fitness in (("fast", 0.8), ("slow", 0.4)):
        cand = archive.add_candidate(run, source=f"SPEED = {fitness}\n", proposer="seed")
        members[name] = archive.record_verdict(cand.id, ladder(fitness=fitness), fitness)
        population.admit(members[name])
    factor = 1 - NOISE_FLOOR - RACE_MARGIN

    def child_of(name, strategy="model"):
        return Proposal({"parent_ids": (members[name].id,)}, strategy)

    assert race_bar(True, population, child_of("fast")) == pytest.approx(0.8 * factor)
    assert race_bar(True, population, child_of("slow")) == pytest.approx(0.4 * factor)
    assert race_bar(True, population, child_of("fast", "material")) is None
    assert race_bar(True, population, None) is None and race_bar(False, population, child_of("fast")) is None
    archive.close()


def test_a_search_whose_tuner_trials_lose_their_races_goes_on_and_keeps_its_best(tmp_path):
    """Every trial of the tuner is raced out (a stand-in harness says so, as a card's measurer would): each is
    archived correct with no fitness, never becomes the best, and the tuner hears at most its best possible figure,
    never a table of the cases it was not timed on."""
    from test_agent import MINI

    def harness(path, problem, options):
        if options.race_below is None:  # the problem's own kernel: timed whole
            return ladder(fitness=0.5)
        return raced_verdict()

    config = RunConfig(problem_dir=str(MINI), db=str(tmp_path / "r.db"), eval=EvalOptions(device="cpu"),
                       max_candidates=5, retime_top=0, artifacts=False, search=SearchConfig(tune_share=1.0))
    archive = Archive(tmp_path / "r.db")
    search = Search(config, archive, None, evaluate=harness, known_material=False)
    summary = search.run()
    cands = archive.candidates(summary.run_id)
    tuned = [c for c in cands if c.proposer == "tuner"]
    assert tuned and all(c.ok and c.fitness is None and c.score is None for c in tuned)
    assert search.best.proposer == "seed" and summary.stop_reason.startswith("--max-candidates")
    told = [entry for history in search.strategies["tuner"].tuner.history.values() for entry in history
            if entry[1] == 0.41]  # raced_verdict's best possible figure
    assert len(told) == len(tuned) and all(cases == {} for _, _, cases in told)
    archive.close()


def test_a_run_refuses_options_that_would_keep_partial_verdicts():
    for partial in (EvalOptions(last_rung="correctness"), EvalOptions(bench_cases=("fp32 4x256",))):
        with pytest.raises(ValueError, match="times every benchmark case"):
            RunConfig(problem_dir="p", eval=partial)


def test_a_problem_s_weights_make_the_fitness_a_weighted_geometric_mean(tmp_path):
    """[[benchmark]] weight = N (how often a shape runs, as evolve model extract writes it): the parent's fitness and
    the race both count a case N times; a weight on a test shape, or not a positive number, is refused."""
    from evolve.harness.parent.ladder import _roofline
    from evolve.harness.shared.problem import ProblemError

    rows = [{"case": label, "shape": [1], "dtype": "float32", "ms": ms, "bytes": 4_000_000, "flops": 0}
            for label, ms in (("fp32 a", 0.002), ("fp32 b", 0.004))]  # fractions 0.5 and 0.25 of a 1 us bound
    bench = RungResult("benchmark", "ok", metrics={"shapes": rows})
    _, _, plain = _roofline(bench, PEAKS, "gpu")
    rung, _, weighted = _roofline(bench, PEAKS, "gpu", {"fp32 a": 3.0, "fp32 b": 1.0})
    assert plain == pytest.approx(math.sqrt(0.5 * 0.25))
    assert weighted == pytest.approx(math.exp((3 * math.log(0.5) + math.log(0.25)) / 4)) and "weighted" in rung.reason
    folder = tmp_path / "p"
    folder.mkdir()
    text = (MINI_TOML := (ROOT / "tests" / "data" / "mini_softmax" / "problem.toml").read_text())
    (folder / "reference.py").write_text((ROOT / "tests" / "data" / "mini_softmax" / "reference.py").read_text())
    (folder / "problem.toml").write_text(text.replace("shape = { M = 4096, N = 1024 }",
                                                      "shape = { M = 4096, N = 1024 }\nweight = 3"))
    assert [c.weight for c in load_problem(folder).benchmarks] == [3.0]
    for bad in ("weight = 0", "weight = true", 'weight = "often"'):
        (folder / "problem.toml").write_text(MINI_TOML.replace("shape = { M = 4096, N = 1024 }",
                                                               f"shape = {{ M = 4096, N = 1024 }}\n{bad}"))
        with pytest.raises(ProblemError, match="weight"):
            load_problem(folder)
    (folder / "problem.toml").write_text(MINI_TOML.replace("shape = { M = 1, N = 7 }", "shape = { M = 1, N = 7 }\n"
                                                           "weight = 2"))
    with pytest.raises(ProblemError, match="and a \\[\\[benchmark\\]\\] entry a weight"):
        load_problem(folder)
