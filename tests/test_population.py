"""The population policy on its own: admission against timing noise, parents, inspirations, migration."""
import random

from evolve.archive import Candidate
from evolve.population import NOISE_FLOOR, Policy, Population


def cand(id, score, island=0, status="evaluated"):
    return Candidate(id=id, run_id=1, hash=str(id), source=f"# {id}", parent_ids=(), island=island, generation=0,
                     proposer="tuner", model=None, template=None, prompt=None, reply=None, tokens_in=0, tokens_out=0,
                     cost=0.0, latency_s=0.0, knobs=None, status=status, error=None, ok=score is not None,
                     fitness=score, score=score, failed_rung=None, reason=None, created="")


def test_admission_keeps_the_incumbent_on_a_near_tie():
    pop = Population(Policy(islands=2), random.Random(0))
    assert not pop.admit(cand(1, None))  # failed: never a member
    assert not pop.admit(cand(2, 0.5, status="pending"))
    assert len(pop) == 0 and pop.best is None
    assert pop.admit(cand(3, 0.50))
    assert not pop.admit(cand(4, 0.50 * (1 + NOISE_FLOOR / 2), island=1))  # inside the noise
    assert pop.best.id == 3 and len(pop) == 2
    assert not pop.admit(cand(5, 0.53), noise=0.10)  # 6% higher, but measured with 10% noise
    assert pop.admit(cand(6, 0.60))
    assert pop.best.id == 6 and pop.islands == [[3, 5, 6], [4]]


def test_choices_repeat_with_the_seed_and_stay_on_the_island():
    def run(seed):
        pop = Population(Policy(islands=2, exploit=0.5, inspirations=2), random.Random(seed))
        for i in range(10):
            pop.admit(cand(i, 0.1 + i / 100, island=i % 2))
        parents = [pop.pick_parent(i % 2) for i in range(20)]
        assert all(p.island == i % 2 for i, p in enumerate(parents))
        return [p.id for p in parents], [[c.id for c in pop.inspirations(p)] for p in parents]

    assert run(7) == run(7)
    parents, inspirations = run(7)
    for parent, chosen in zip(parents, inspirations):
        assert parent not in chosen and len(chosen) == 2
        assert chosen[0] == (9 if parent != 9 else 8)  # the best other member comes first


def test_migration_carries_each_islands_best_to_the_next():
    pop = Population(Policy(islands=3), random.Random(0))
    for id, score, island in [(1, 0.3, 0), (2, 0.5, 0), (3, 0.4, 1), (4, 0.2, 2)]:
        pop.admit(cand(id, score, island))
    assert pop.pick_parent(2).id == 4  # an island with members picks among them
    sizes = pop.migrate()
    assert pop.islands == [[1, 2, 4], [3, 2], [4, 3]] and sizes == [3, 2, 2]
    empty = Population(Policy(islands=2), random.Random(0))
    assert empty.pick_parent(0) is None and empty.migrate() == [0, 0]
