"""Compiling ahead, off the card: in GPU mode the compile-only runner (no GPU device files in its jail, so it goes on
while other evaluations hold the card's lease) is handed the candidate with the shapes the GPU runner will call it on,
and what its compiled-kernel cache holds (the language's: Triton's, TileLang's) is copied into the GPU runner's before
each part's first call."""
from __future__ import annotations

import os
import signal
import time

from ...lang import DEFAULT as DEFAULT_LANGUAGE
from ...lang import get as get_language
from ..shared import compiled
from ..shared.formats import shapes_ahead
from ..shared.privilege import UID_ENV
from .exchange import RunnerLost

PRECOMPILE_WAIT_S = 60.0  # the GPU runner's compile rung waits this long for the compile-only runner, then goes on


class CompileAhead:
    """start() hands the compile-only runner its work; take(part) waits for that part's answer and copies the cache."""

    def __init__(self, job: dict, problem, secret: int, device, caller, channel, lease, reference=None):
        self.job, self.problem, self.secret, self.device = job, problem, secret, device
        self.reference = reference  # a foreign problem's describes its shapes where its code runs
        self.caller, self.ch, self.lease = caller, channel, lease
        self.started = 0.0
        self.pending: list = []  # the parts not yet taken, in the order the GPU runner needs them
        self.records: dict = {}  # part -> what was taken (for the rung's record)

    def start(self, jail: str) -> None:
        """jail: how the compile-only runner was jailed (its hello): under Landlock it cannot reach the card, so the
        lease lets this evaluation's compiling go on while another holds the card."""
        self.started = time.perf_counter()
        if jail.startswith("landlock"):
            self.ch.send({"kind": "lease", "act": "offcard"})
        try:
            self.caller.send({"kind": "load", "candidate": self.job["candidate"],
                              "beside": bool(self.problem.extra.get("beside"))})
            remote = getattr(self.reference, "shapes_ahead", None)
            described = remote(self.secret, self.device) if remote else shapes_ahead(self.problem, self.secret,
                                                                                       self.device)
            for sets in described.values():
                self.caller.send({"kind": "precompile", "sets": sets, "launchers": True})
        except RunnerLost:
            return
        self.pending = ["tests", "benchmarks"]

    def take(self, part: str) -> None:
        """Before the GPU runner first calls the candidate on a part's shapes: wait (up to PRECOMPILE_WAIT_S from the
        start) for the compile-only runner's answer on that part, and copy what its kernel cache holds into the GPU
        runner's; after the last part, stop it. Both run the same candidate, and nothing the copy brings decides a
        verdict (a kernel missing or not matching is compiled by the GPU runner under its own key)."""
        if part not in self.pending:
            return
        waited = time.perf_counter()
        answer = self._answer()
        del self.pending[: self.pending.index(part) + 1]
        if answer is None:
            self.pending.clear()
        if not self.pending:
            self.lease.signal_runners(signal.SIGKILL, names=("compile",))
        record = {"waited_s": round(time.perf_counter() - waited, 3)}
        if answer:
            record.update(seconds=answer["seconds"], sets=answer["sets"], kernels=answer["kernels"],
                          launchers=answer["launchers"])
        # what the runner has written so far (a kernel's files appear under their final names complete, the group
        # file that lists them last), whether or not it answered
        owner = os.environ.get(UID_ENV)  # the GPU runner runs as this user (harness/shared/privilege.py): its files too
        language = get_language(self.job.get("language") or DEFAULT_LANGUAGE)
        record["files"] = compiled.copy_cache(os.path.join(os.getcwd(), "compile", language.cache_folder),
                                              os.path.join(os.getcwd(), "gpu", language.cache_folder),
                                              int(owner) if owner else None, language.cache_levels)
        self.records[part] = record

    def _answer(self) -> dict | None:
        """The compile-only runner's next answer, or None: it failed, died, spoke nonsense or ran past the wait."""
        try:
            while True:
                # past the deadline, an answer already here is still taken (time stopped for other evaluations'
                # leases runs on this clock)
                left = max(0.0, PRECOMPILE_WAIT_S - (time.perf_counter() - self.started))
                if not self.caller.answered(left):
                    return None
                message = self.caller.link.recv()
                if message["kind"] == "precompiled":
                    return message
                if message["kind"] == "failed":
                    return None
        except Exception:  # noqa: BLE001 - a runner that died or spoke nonsense: no head start
            return None
