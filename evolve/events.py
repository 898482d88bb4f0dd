"""What a run tells whoever watches it (progress.py, the benchmarks, evolve bench): one event a dict, its "kind"
naming one of the shapes below. The search, its pipeline and its rounds emit them; `check` says where an event
strays from its shape, and a test holds every event of a run to it."""
from __future__ import annotations

from typing import Any, TypedDict, get_type_hints


class Start(TypedDict):
    kind: str
    run_id: int
    resumed: bool
    members: int  # correct kernels already in the archive for this problem and device


class Lanes(TypedDict):
    kind: str
    lanes: list  # lane names: gpu0, gpu0.1 ... or cpu
    gpu: bool


class _CandidateDone(TypedDict):
    kind: str  # "candidate"
    candidate: Any  # archive.Candidate, evaluated
    seconds: float  # the lane's time for it (0 for a verdict kept from an earlier run)
    best: Any  # the population's best after it, or None
    lane: Any  # the lane's name, or None for a kept verdict


class CandidateDone(_CandidateDone, total=False):
    known: bool  # the verdict was kept from an earlier run on this machine


class Invalid(TypedDict):
    kind: str
    candidate: Any


class Duplicate(TypedDict):
    kind: str


class Resume(TypedDict):
    kind: str
    candidate: Any  # in flight when the last run stopped: evaluated again


class Unevaluated(TypedDict):
    kind: str
    candidate: Any
    reason: Any  # why no lane evaluated it


class Compose(TypedDict):
    kind: str
    plan: Any  # compose.Plan
    incumbent: Any


class Duel(TypedDict):
    kind: str
    candidate: Any  # the challenger
    incumbent: Any
    lane: str


class DuelResult(TypedDict):
    kind: str
    candidate: Any
    incumbent: Any
    figure: Any  # the incumbent's new score, or None
    holds: bool
    best: Any


class Paused(TypedDict):
    kind: str


class Resumed(TypedDict):
    kind: str
    seconds: float


class Migrate(TypedDict):
    kind: str
    islands: list  # island sizes after the migration


class Context(TypedDict):
    kind: str
    chunks: int
    files: int
    folders: list
    skipped: int
    seconds: float


class Reason(TypedDict):
    kind: str  # context_off, profile_off, retime_off
    reason: str


class LaneFault(TypedDict):
    kind: str
    lane: str
    candidate: Any  # the job's key
    reason: str
    requeued: bool


class LaneName(TypedDict):
    kind: str  # lane_back, lane_retired
    lane: str


class Retiming(TypedDict):
    kind: str
    ids: list
    rounds: int


class Retime(TypedDict):
    kind: str
    candidate_id: int
    round: int
    figure: Any
    reason: Any


class Audit(TypedDict):
    kind: str
    candidate: Any
    audit: Any  # launch_audit.Audit


class Profile(TypedDict):
    kind: str
    candidate: Any
    result: Any  # profiling.ProfileResult


SHAPES: dict[str, type] = {
    "start": Start, "lanes": Lanes, "candidate": CandidateDone, "invalid": Invalid, "duplicate": Duplicate,
    "resume": Resume, "unevaluated": Unevaluated, "compose": Compose, "duel": Duel, "duel_result": DuelResult,
    "paused": Paused, "resumed": Resumed, "migrate": Migrate, "context": Context, "context_off": Reason,
    "profile_off": Reason, "retime_off": Reason, "lane_fault": LaneFault, "lane_back": LaneName,
    "lane_retired": LaneName, "retiming": Retiming, "retime": Retime, "audit": Audit, "profile": Profile,
    "trace": Profile, "trace_off": Reason,
}


def check(event: dict) -> str | None:
    """Where the event strays from its kind's shape (an unknown kind, a field missing or extra), or None."""
    shape = SHAPES.get(event.get("kind"))
    if shape is None:
        return f"unknown event kind {event.get('kind')!r}"
    fields = get_type_hints(shape)
    required = shape.__required_keys__
    missing = sorted(required - event.keys())
    extra = sorted(event.keys() - fields.keys())
    if missing or extra:
        return f"{event['kind']}: " + "; ".join(filter(None, [missing and f"missing {', '.join(missing)}",
                                                             extra and f"extra {', '.join(extra)}"]))
    return None
