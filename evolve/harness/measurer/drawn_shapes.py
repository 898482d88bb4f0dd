"""Shapes drawn for one evaluation, with its secret, from what the problem declares its kernels accept (`[accepts]`
in problem.toml): a kernel that is right only on the listed shapes (a tail dropped on widths it was never shown)
fails on these, and no candidate knows them before it is called with them. Each is no larger than the largest listed
test shape, so the check costs what a test case does."""
from __future__ import annotations

import math
import random

from ..shared.problem import Case
from ..shared.seeds import mix

DRAWN = 2  # shapes per evaluation, each checked on the problem's first seed
SHAPE_SEED = 1 << 44  # mixed with the evaluation's secret


def draw(problem, secret: int) -> tuple[Case, ...]:
    """DRAWN cases, each a listed test case (its dtype and params) with the declared dimensions drawn anew."""
    if not problem.accepts:
        return ()
    rng = random.Random(mix(secret, SHAPE_SEED))
    return tuple(_drawn(rng, problem, rng.choice(problem.tests)) for _ in range(DRAWN))


def why_none(problem) -> str | None:
    """Why an evaluation of this problem checks its listed shapes only (None where it draws others)."""
    if problem.accepts:
        return None
    if problem.format != "evolve":
        return f"a {problem.format} problem fixes its shapes, so only the listed ones are checked"
    return "the problem declares no [accepts], so only its listed shapes are checked"


def _drawn(rng: random.Random, problem, template: Case) -> Case:
    """The template with each declared dimension drawn (log-uniform over its range, in a random order), the product
    of the dimensions held to the largest test shape's."""
    shape = dict(template.shape)
    budget = max(math.prod(dict(case.shape).values()) for case in problem.tests)
    spec = dict(problem.accepts)
    names = list(spec)
    rng.shuffle(names)
    left = budget // math.prod(v for k, v in shape.items() if k not in spec) or 1
    for index, name in enumerate(names):
        rest = math.prod(_lowest(spec[other]) for other in names[index + 1:])
        shape[name] = _value(rng, spec[name], max(left // rest, 1))
        left = max(left // shape[name], 1)
    return Case(tuple(shape.items()), template.dtype, template.params, template.seed)


def _lowest(spec: dict) -> int:
    return min(spec["one_of"]) if "one_of" in spec else spec["min"]


def _value(rng: random.Random, spec: dict, cap: int) -> int:
    if "one_of" in spec:
        fits = [v for v in spec["one_of"] if v <= cap]
        return rng.choice(fits) if fits else min(spec["one_of"])
    low, step = spec["min"], spec.get("multiple_of", 1)
    high = max(min(spec["max"], cap), low)
    value = round(math.exp(rng.uniform(math.log(low), math.log(high + 1)))) if high > low else low
    value = -(-value // step) * step  # up to the next multiple
    return value if value <= high else max(high // step * step, low)
