"""The population of a search: islands of correct candidates, admission, parent choice, inspirations, migration.

Pure policy (FunSearch's shape): no archive, no model, no clock. The search (search.py) admits every evaluated
candidate and asks this module whom to build on; the random choices come from the generator it is given, so a
seeded run makes the same choices again.

Each island is also a diversity archive (diversity.py): every member has a cell (structure family, tile size,
registers), and a share of parents (Policy.diversity) is drawn across the island's occupied cells (a family, one of
its cells, that cell's elite) rather than from the island's top. Islands and migration keep their part: the cells
are counted within an island, so each island keeps elites of its own, and a migrant adds its cell to the next island.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from . import defaults as D
from .archive import Candidate
from .diversity import Cell, cell_of, draw_across, elites

NOISE_FLOOR = 0.02  # the smallest relative score difference treated as real, whatever the measured noise
NOISE_CEILING = 0.10  # the largest: a member's scattered times never shield it from a challenger 10% faster


@dataclass(frozen=True)
class Policy:
    islands: int = 2
    exploit: float = 0.7  # chance of picking a parent from the island's top (else any correct member)
    inspirations: int = 2
    diversity: float = D.DIVERSITY  # chance of drawing a parent across the island's cells (diversity.py) instead

class Population:
    def __init__(self, policy: Policy, rng: random.Random, locate=None):
        self.policy, self.rng = policy, rng
        self.locate = locate or cell_of  # Candidate -> Cell; the search's reads the compiled kernels' registers too
        self.cells: dict[int, Cell] = {}  # each member's cell, placed once when it is first admitted
        self.islands: list[list[int]] = [[] for _ in range(policy.islands)]
        self.members: dict[int, Candidate] = {}
        self.noise: dict[int, float] = {}  # relative timing noise measured for each member
        self.best: Candidate | None = None

    def admit(self, cand: Candidate, noise: float = NOISE_FLOOR, contend: bool = True) -> bool:
        """Add an evaluated, correct candidate to its island; True when it is the new best (by more than the noise).
        contend=False: a member, a parent and an inspiration, but not the best (its win was not confirmed)."""
        if cand.status != "evaluated" or cand.score is None:
            return False
        self.members[cand.id] = cand
        self.noise[cand.id] = noise
        if cand.id not in self.cells:
            self.cells[cand.id] = self.locate(cand)
        island = self.islands[cand.island % len(self.islands)]
        if cand.id not in island:
            island.append(cand.id)
        if contend and (self.best is None or self.better(cand, self.best)):
            self.best = cand
            return True
        return False

    def better(self, a: Candidate, b: Candidate) -> bool:
        """a beats b only by more than the timing noise measured for either (near-ties keep the incumbent)."""
        noise = max(self.noise.get(a.id, NOISE_FLOOR), self.noise.get(b.id, NOISE_FLOOR))
        return a.score > b.score * (1 + noise)

    def ranked(self, ids=None) -> list[Candidate]:
        ids = self.members if ids is None else ids
        return sorted((self.members[i] for i in ids if i in self.members), key=lambda c: -c.score)

    def pick_parent(self, island: int) -> Candidate | None:
        pool = self.ranked(self.islands[island]) or self.ranked()
        if not pool:
            return None
        if self.policy.diversity and self.rng.random() < self.policy.diversity:  # no draw at 0: seeds replay as before
            return draw_across(elites(pool, self.cells), self.rng)
        if self.rng.random() < self.policy.exploit:
            return pool[min(int(self.rng.expovariate(1.0)), len(pool) - 1)]
        return self.rng.choice(pool)

    def elites(self, island: int | None = None) -> dict[Cell, Candidate]:
        """Each occupied cell's elite, on one island or over every member."""
        return elites(self.ranked(self.islands[island] if island is not None else None), self.cells)

    def inspirations(self, parent: Candidate) -> list[Candidate]:
        """The best other members and one other: with the diversity archive, the elite of another structure family
        where there is one (a model sees a way the parent is not written), else any other member."""
        ranked = [c for c in self.ranked() if c.id != parent.id]
        chosen = ranked[: max(0, self.policy.inspirations - 1)]
        rest = [c for c in ranked if c not in chosen]
        family = self.cells[parent.id].family if parent.id in self.cells else None
        elsewhere = [c for c in elites(rest, self.cells).values() if self.cells[c.id].family != family] \
            if self.policy.diversity and family is not None else []
        if elsewhere or rest:
            chosen.append(self.rng.choice(elsewhere or rest))
        return chosen[: self.policy.inspirations]

    def migrate(self) -> list[int]:
        """Each island's best joins the next island; returns the islands' sizes."""
        bests = [self.ranked(ids)[:1] for ids in self.islands]
        for i, best in enumerate(bests):
            if best:
                target = self.islands[(i + 1) % len(self.islands)]
                if best[0].id not in target:
                    target.append(best[0].id)
        return [len(i) for i in self.islands]

    def __len__(self) -> int:
        return len(self.members)
