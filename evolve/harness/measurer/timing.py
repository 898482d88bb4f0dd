"""Timing trusted code in the measurer's own process: the library baselines and the device peaks (GPU), and host-clock
medians (CPU). Candidates are never timed here: their calls are timed from outside the runner
(harness/measurer/exchange.py).

GPU: each repetition copies one of several fixed input sets into a new allocation, synchronizes, flushes L2 by
writing a buffer larger than the cache, spins briefly on the GPU (so the call is issued while the GPU is still busy
and no host launch latency is timed), and times the call between two CUDA events. The number of repetitions adapts
to the call's duration within a time budget.
"""
import statistics
import time

import torch

# GPU-side spin queued before the start event (~250 us at 2 GHz): long enough for a Python wrapper and the launch path
# to enqueue the call before the event fires, so host launch latency is not timed as kernel time.
HOST_SLACK_CYCLES = 500_000

L2_FLUSH_BYTES = 256 * 1024 * 1024  # > 60 MB L2 of an H200 / 50 MB of an H100


def _inputs_for(source, n: int):
    """Rep n's inputs: source(n) when source is a feed (new values every call), else a new copy of a fixed set."""
    if callable(source):
        return source(n)
    return fresh_copy(source[n % len(source)])


def fresh_copy(inputs):
    """New allocations holding the same values: a cache keyed by pointer or identity sees a new object."""
    out = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            copy = torch.empty_like(value)
            copy.copy_(value)
            out.append(copy)
        else:
            out.append(value)
    return tuple(out)


class GpuTimer:
    def __init__(self, device, budget_s: float = 0.4, min_reps: int = 10, max_reps: int = 200):
        self.device = device
        self.budget_s = budget_s
        self.min_reps = min_reps
        self.max_reps = max_reps
        self.flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device=device)

    def _one(self, fn, inputs) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        self.flush.zero_()
        torch.cuda._sleep(HOST_SLACK_CYCLES)  # the GPU flushes L2, then idles while the host issues the call
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    def time(self, fn, sets) -> dict:
        """Median time of fn over repetitions, each on a new copy of one of the fixed input sets."""
        counter = [0]

        def rep():
            counter[0] += 1
            return self._one(fn, fresh_copy(sets[counter[0] % len(sets)]))

        started = time.perf_counter()
        warm = [rep() for _ in range(3)]
        per_rep_s = max((time.perf_counter() - started) / 3, 1e-6)
        reps = int(min(self.max_reps, max(self.min_reps, self.budget_s / per_rep_s)))
        events = [rep() for _ in range(reps)]
        event_ms = statistics.median(events)
        quartiles = statistics.quantiles(events, n=4) if len(events) >= 4 else [event_ms] * 3
        return {"ms": event_ms, "event_ms": event_ms, "reps": reps, "warmup": len(warm),
                "iqr_rel": (quartiles[2] - quartiles[0]) / event_ms if event_ms > 0 else 0.0}


def cpu_time(fn, source, check=None, budget_s: float = 1.0, max_reps: int = 20) -> dict:
    """Host-clock median on the CPU: honest CPU time, not a GPU figure. source is a feed, source(n) -> inputs of
    rep n, or a list of fixed input sets copied afresh each rep; check(result, n) runs on every output."""
    times = []
    started = time.perf_counter()
    n = 0
    while n < 2 or (n < max_reps and time.perf_counter() - started < budget_s):
        inputs = _inputs_for(source, n)
        t0 = time.perf_counter()
        result = fn(*inputs)
        times.append((time.perf_counter() - t0) * 1e3)
        if check is not None:
            check(result, n)
        n += 1
    return {"ms": statistics.median(times), "reps": len(times), "clock": "cpu-interpreter"}
