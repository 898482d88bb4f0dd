"""The bandit over models (evolve/model_bandit.py) on synthetic rewards, seeded: the model with more gain per dollar
gets most proposals, a model of weight 0 none, the others keep being tried, the weights are the prior, seconds are
the cost where a model has no price, and a proposal's gain is its score over its parent's."""
import math
import random
from collections import Counter

import pytest

from evolve.model_bandit import FIRST_GAIN, ModelBandit, gain_of, reference_score
from evolve.population import NOISE_FLOOR
from evolve.proposer import ModelSpec

CHEAP, DEAR = "openai/gpt-4o-mini", "openai/gpt-4o"


def simulate(bandit: ModelBandit, truth: dict, picks: int, seed: int = 0, among=None) -> list[str]:
    """`picks` proposals: each arm's (dollars, seconds, chance of a gain, the gain) per proposal; the picks in order."""
    luck = random.Random(seed)
    order = []
    for _ in range(picks):
        key = bandit.choose(among or list(bandit.arms))
        dollars, seconds, chance, gain = truth[key]
        bandit.record(key, dollars, seconds, gain if luck.random() < chance else 0.0)
        order.append(key)
    return order


def test_the_model_with_more_gain_per_dollar_gets_most_proposals_and_the_other_keeps_being_tried():
    bandit = ModelBandit({CHEAP: 1.0, DEAR: 1.0}, seed=1)
    # the same gain per proposal; the dear one costs 16 times as much (gpt-4o against gpt-4o-mini)
    order = simulate(bandit, {CHEAP: (0.001, 5.0, 0.5, 0.1), DEAR: (0.016, 5.0, 0.5, 0.1)}, 400)
    counts = Counter(order)
    assert counts[CHEAP] > 0.8 * len(order), counts
    assert Counter(order[-200:])[DEAR] >= 4  # exploration: still asked late in the run
    assert bandit.estimate(CHEAP) > 5 * bandit.estimate(DEAR)


def test_a_dearer_model_that_gains_far_more_per_dollar_gets_most_proposals():
    bandit = ModelBandit({CHEAP: 1.0, DEAR: 1.0}, seed=2)
    # the dear one gains 50 times as much per proposal for 16 times the price
    order = simulate(bandit, {CHEAP: (0.001, 5.0, 0.5, 0.02), DEAR: (0.016, 5.0, 0.5, 1.0)}, 400)
    assert Counter(order)[DEAR] > 0.75 * len(order), Counter(order)


def test_a_model_of_weight_zero_is_never_asked_and_one_that_gains_nothing_still_is():
    bandit = ModelBandit({"a": 1.0, "b": 1.0, "never": 0.0}, seed=3)
    order = simulate(bandit, {"a": (0.01, 5.0, 0.5, 0.1), "b": (0.01, 5.0, 0.0, 0.0), "never": (0.0, 0.0, 1, 9.0)},
                     600)
    counts = Counter(order)
    assert counts["never"] == 0 and bandit.arms["never"].proposals == 0
    # b never gains: asked about one pick in twenty (one in ten explores, by weight), in every stretch of the run
    assert 0.03 * len(order) <= counts["b"] <= 0.15 * len(order), counts
    assert all("b" in order[i:i + 150] for i in range(0, 600, 150))


def test_the_weights_are_the_prior():
    bandit = ModelBandit({"heavy": 3.0, "light": 1.0}, seed=4)
    picks = Counter(bandit.choose(["heavy", "light"]) for _ in range(400))  # no evidence at all
    assert picks["heavy"] > 0.6 * 400 and picks["light"] > 0.1 * 400, picks
    # evidence outweighs the prior: the light one gains, the heavy one does not
    order = simulate(bandit, {"heavy": (0.01, 5.0, 0.0, 0.0), "light": (0.01, 5.0, 0.6, 0.1)}, 300)
    assert Counter(order[-150:])["light"] > 0.7 * 150


def test_seconds_are_the_cost_where_a_model_has_no_price():
    bandit = ModelBandit({"openai/local": 1.0, CHEAP: 1.0}, seed=5)
    # the local model is free and five times slower for the same gain: compared per second, it loses
    order = simulate(bandit, {"openai/local": (0.0, 50.0, 0.5, 0.1), CHEAP: (0.001, 10.0, 0.5, 0.1)}, 300)
    assert bandit.unit() == "seconds" and Counter(order)[CHEAP] > 0.7 * len(order), Counter(order)
    priced = ModelBandit({CHEAP: 1.0, DEAR: 1.0})
    priced.record(CHEAP, 0.001, 5.0, 0.0)
    assert priced.unit() == "dollars"


def test_a_seeded_bandit_picks_alike():
    truth = {CHEAP: (0.001, 5.0, 0.5, 0.1), DEAR: (0.016, 5.0, 0.5, 0.1)}
    first = simulate(ModelBandit({CHEAP: 1.0, DEAR: 1.0}, seed=7), truth, 100)
    again = simulate(ModelBandit({CHEAP: 1.0, DEAR: 1.0}, seed=7), truth, 100)
    other = simulate(ModelBandit({CHEAP: 1.0, DEAR: 1.0}, seed=8), truth, 100)
    assert first == again and first != other


def test_a_strategy_chooses_among_its_own_models_named_as_the_leaderboard_names_them():
    specs = [ModelSpec("openai/a"), ModelSpec("openai/a", agent=True), ModelSpec("openai/b", 0.0)]
    bandit = ModelBandit.of_models(specs, seed=0)
    assert bandit.arms.keys() == {"openai/a", "openai/a (agent)", "openai/b"}
    assert {bandit.choose_model(specs[:1] + specs[2:], agent=False) for _ in range(50)} == {"openai/a"}
    everyone = ModelBandit.of_models(specs[:1], every_agent=True)  # --agent: every model an agent
    assert list(everyone.arms) == ["openai/a (agent)"]


def test_a_proposals_gain_is_its_score_over_its_nearest_scored_ancestor_beyond_the_noise():
    known = {1: (0.5, ()), 2: (None, (1,)), 3: (0.25, ())}  # 2 failed (a repair's parent), 1 is its parent
    lookup = known.get
    assert reference_score([2], lookup) == 0.5 and reference_score([1, 3], lookup) == 0.5
    assert gain_of(0.6, [1], lookup) == pytest.approx(math.log(0.6 / 0.5) - math.log1p(NOISE_FLOOR))
    assert gain_of(0.6, [2], lookup) == gain_of(0.6, [1], lookup)  # a repair is measured against what it repaired
    assert gain_of(0.5 * (1 + NOISE_FLOOR / 2), [1], lookup) == 0.0  # within the noise: nothing gained
    assert gain_of(0.4, [1], lookup) == 0.0 and gain_of(None, [1], lookup) == 0.0
    assert gain_of(0.4, [], lookup) == FIRST_GAIN and gain_of(0.4, [99], lookup) == FIRST_GAIN


def test_a_proposal_asked_before_any_verdict_is_measured_against_the_best_its_run_held_when_it_landed():
    """A proposal asked before the seeds' verdicts were in has no parent: it gains what it adds to the run's best
    then, not a doubling for merely being correct (which would favour whichever model was asked first)."""
    lookup = {}.get
    assert gain_of(0.5, [], lookup, earlier=0.5) == 0.0
    assert gain_of(1.0, [], lookup, earlier=0.5) == pytest.approx(math.log(2.0) - math.log1p(NOISE_FLOOR))
    assert gain_of(0.4, [], lookup, earlier=None) == FIRST_GAIN  # nothing scored before it: a first kernel
    rows = [{"id": 1, "proposer": "seed", "status": "evaluated", "score": 0.5, "parent_ids": (), "model": None,
             "template": None, "cost": 0.0, "latency_s": 0.0},
            {"id": 2, "proposer": "llm", "status": "evaluated", "score": 0.5, "parent_ids": (), "model": "a",
             "template": "full_rewrite", "cost": 0.01, "latency_s": 1.0}]
    bandit = ModelBandit({"a": 1.0})
    bandit.replay(rows, {row["id"]: (row["score"], ()) for row in rows}.get)
    assert bandit.arms["a"].proposals == 1 and bandit.arms["a"].gain == 0.0  # replayed as it was heard
