"""How a run with several models split its budget among them, and why: per model its proposals, dollars, seconds and
gain, and the bandit's estimate of its gain per dollar, as `evolve status` and the leaderboard show them. Read back
from the archive through the bandit's own account (model_bandit.py), so what they say is what the bandit weighed."""
from __future__ import annotations

from dataclasses import dataclass

from .archive import Archive
from .model_bandit import ModelBandit, archive_lookup
from .proposer import ModelSpec


@dataclass(frozen=True)
class Share:
    """One model's part of a run's model proposals."""
    model: str  # as the leaderboard names it: NAME, or NAME (agent)
    weight: float  # the user's
    proposals: int  # landed: evaluated, invalid or a paid duplicate (pending ones are not in yet)
    share: float | None  # of the run's model proposals
    dollars: float
    seconds: float  # the model's calls or sessions and the evaluations
    gain: float  # model_bandit.gain_of, summed over its proposals
    gain_per_dollar: float | None  # None where it spent no dollars
    estimate: float | None  # the bandit's posterior mean of gain per dollar (per second: Split.unit); None: weights
    why: str  # why it got this share, in a few words


@dataclass(frozen=True)
class Split:
    choice: str  # "bandit" or "weights" (--model-choice; runs from before the bandit picked by weight)
    unit: str  # what the bandit's estimates are per: "dollars", or "seconds" where a model has no price
    shares: tuple[Share, ...]


def run_split(archive: Archive, run_id: int, rows: list[dict] | None = None) -> Split | None:
    """The split of a run with two models or more with a positive weight (None otherwise); `rows`: its
    Archive.timeline, where already read."""
    options = archive.run(run_id).get("options") or {}
    specs = [ModelSpec(m["name"], float(m.get("weight", 1.0)), bool(m.get("agent")))
             for m in options.get("models") or [] if m.get("name")]
    if sum(m.weight > 0 for m in specs) < 2:
        return None
    rows = archive.timeline(run_id) if rows is None else rows
    bandit = ModelBandit.of_models(specs, every_agent=bool((options.get("search") or {}).get("agent")))
    bandit.replay(rows, archive_lookup(archive, rows))
    return describe(bandit, options.get("model_choice") or "weights")


def describe(bandit: ModelBandit, choice: str) -> Split:
    arms = list(bandit.arms.values())
    total = sum(a.proposals for a in arms)
    unit = bandit.unit()
    estimates = {a.key: bandit.estimate(a.key) for a in arms if a.weight > 0}
    leader = max(estimates, key=lambda key: estimates[key], default=None)
    per = "$" if unit == "dollars" else "second"

    def why(arm) -> str:
        if arm.weight == 0:
            return "weight 0: never asked"
        if choice != "bandit":
            return f"by weight ({arm.weight:g})"
        if not arm.proposals:
            return "not tried yet"
        return f"most gain per {per}" if arm.key == leader else "exploring"

    return Split(choice, unit, tuple(
        Share(a.key, a.weight, a.proposals, a.proposals / total if total else None, a.dollars, a.seconds, a.gain,
              a.gain / a.dollars if a.dollars > 0 else None, estimates.get(a.key) if choice == "bandit" else None,
              why(a)) for a in arms))


def split_lines(run_id: int, split: Split) -> list[str]:
    """The split as `evolve status` prints it under its run, every line under 100 characters."""
    asked = sum(s.proposals for s in split.shares)
    per = "$" if split.unit == "dollars" else "second"
    how = (f"by the bandit (gain per {per}, the weights its prior)" if split.choice == "bandit"
           else "at random by weight")
    out = [f"run {run_id}: {asked} model proposals, their models chosen {how}",
           f"      {'model':<28}{'asked':>6}{'share':>7}{'$':>9}{'gain':>8}{'gain/$':>9}  why"]
    for s in split.shares:
        share = f"{100 * s.share:.0f}%" if s.share is not None else "-"
        per_dollar = f"{s.gain_per_dollar:.3g}" if s.gain_per_dollar is not None else "-"
        out.append(f"      {s.model[:27]:<28}{s.proposals:>6}{share:>7}{s.dollars:>9.4f}{s.gain:>8.3g}"
                   f"{per_dollar:>9}  {s.why}")
    return out


GAIN_NOTE = "gain: the log of each kernel's score over its parent's, beyond the timing noise, summed"
