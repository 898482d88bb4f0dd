"""The measurer's side of the card's timing lease (the parent's side is harness/parent/lease.py): asked for on the
signed channel, granted by a byte on a pipe of its own, and on a GPU held only once the card is quiet."""
from __future__ import annotations

import contextlib
import os
import signal
import time

import torch

from .exchange import Fail

QUIET_PROBE_MS = 1.0  # a launch and wait of one tiny kernel, above which another process's work holds up the card
QUIET_STREAK = 3
QUIET_WAIT_S = 10.0  # then the evaluations stopped for the lease are evicted (evaluated again later)


class TimingLease:
    def __init__(self, channel, grant_fd: int, device: torch.device, runner_pgids: dict):
        self.ch, self.grant_fd, self.device = channel, grant_fd, device
        self.runner_pgids = runner_pgids  # each runner's process group (its own session), by runner name
        self.quiet_waits: list[float] = []  # seconds each timed section waited for the card to be quiet
        self.quiet_probe = None  # the tiny tensor wait_quiet launches its kernel on
        self.holding = False  # whether this evaluation holds the card's lease now

    @contextlib.contextmanager
    def hold(self):
        """Work whose figures a verdict is made of: under the card's lease, every other evaluation on the card stopped,
        and (GPU) once the card is quiet."""
        self.ch.send({"kind": "lease", "act": "take"})
        while True:
            try:
                grant = os.read(self.grant_fd, 1)
            except InterruptedError:
                continue
            if not grant:
                raise Fail("the harness could not grant the card's timing lease (its parent closed the pipe)")
            break
        try:
            self.holding = True
            if self.device.type == "cuda":  # b"q": other evaluations on the card were stopped for it
                self.quiet_waits.append(self.wait_quiet() if grant == b"q" else 0.0)
            yield
        finally:
            self.holding = False
            self.ch.send({"kind": "lease", "act": "give"})

    def timing(self):
        """The lease for a measurement, unless this evaluation holds it already."""
        return contextlib.nullcontext() if self.holding else self.hold()

    def wait_quiet(self) -> float:
        """Wait until no other process's GPU work runs on the card: a tiny kernel of this process's, launched and
        waited for, takes QUIET_PROBE_MS or less QUIET_STREAK times in a row (another context's kernel on the card
        holds it up). The evaluations stopped for this lease cannot queue more; what they had queued is waited
        for, and after QUIET_WAIT_S they are evicted. This evaluation's own runners are stopped while it probes (an
        honest runner has no work between calls). Returns the seconds waited."""
        started = time.perf_counter()
        if self.quiet_probe is None:
            self.quiet_probe = torch.zeros(1, device=self.device)
        probe = self.quiet_probe
        streak, evicted = 0, False
        self.signal_runners(signal.SIGSTOP)
        try:
            while streak < QUIET_STREAK:
                began = time.perf_counter()
                probe.add_(1)
                torch.cuda.synchronize()
                streak = streak + 1 if (time.perf_counter() - began) * 1e3 <= QUIET_PROBE_MS else 0
                if streak == 0 and time.perf_counter() - started > QUIET_WAIT_S * (2 if evicted else 1):
                    if evicted:
                        raise Fail(f"the card stayed busy for {time.perf_counter() - started:.0f} s after every other "
                                   "evaluation on it was stopped and evicted: work this candidate queued outside its "
                                   "calls, or another program on the GPU")
                    self.ch.send({"kind": "lease", "act": "evict"})
                    evicted = True
        finally:
            self.signal_runners(signal.SIGCONT)
        return round(time.perf_counter() - started, 4)

    def signal_runners(self, signum: int, names=None) -> None:
        """Send signum to the process groups of the runners named (all of them by default)."""
        for name, pgid in self.runner_pgids.items():
            if pgid and (names is None or name in names):  # never 0: killpg(0) is this process's own group
                try:
                    os.killpg(pgid, signum)
                except (ProcessLookupError, PermissionError):
                    pass
