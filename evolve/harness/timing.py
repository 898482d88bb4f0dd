"""Timing a call on the GPU (CUDA events, bounded below by the host clock) or under the CPU interpreter.

Each repetition: fresh inputs (new values from a feed, or a copy of one of several fixed input sets into a new
allocation for the harness's own baselines), a device-wide
synchronize, L2 flushed by writing a buffer larger than the cache, a short GPU-side spin (both queued, so the call is
issued while the GPU is still busy and no host launch latency is timed), the timed call between two events, and a
device-wide synchronize again. The host clock around all that bounds the event figure: work the events do not see (a
side stream, a kernel launched late) still shows up in the host time, and then the host time, less the measured fixed
cost of the same sequence around a trivial op (flush included), is the figure. The number of repetitions adapts to the
call's duration within a time budget. All functions used are bound when this module is imported, before a candidate.
"""
from __future__ import annotations

import contextlib
import gc
import statistics
import time

import torch

_perf_counter = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_synchronize = torch.cuda.synchronize
_empty = torch.empty
_empty_like = torch.empty_like
_copy = torch.Tensor.copy_
_zero = torch.Tensor.zero_
_sleep = torch.cuda._sleep

# GPU-side spin queued before the start event (~250 us at 2 GHz): long enough for a Python wrapper and Triton's
# launch path to enqueue the kernel before the event fires, so host launch latency is not timed as kernel time.
HOST_SLACK_CYCLES = 500_000

L2_FLUSH_BYTES = 256 * 1024 * 1024  # > 60 MB L2 of an H200 / 50 MB of an H100


_gc_disable, _gc_enable, _gc_isenabled, _gc_collect = gc.disable, gc.enable, gc.isenabled, gc.collect


@contextlib.contextmanager
def collector_paused():
    """No automatic garbage collection from a call to the end of its check: a collection there could run a
    finalizer of the candidate's (a cycle holding a generator) inside the harness's checks. On the way out the
    youngest generation, where the call's own cycles are, is collected at once (well under a millisecond), so garbage
    kept just under the collector's threshold cannot pile up across calls."""
    was = _gc_isenabled()
    _gc_disable()
    try:
        yield
    finally:
        if was:
            _gc_enable()
        _gc_collect(0)


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
            copy = _empty_like(value)
            _copy(copy, value)
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
        self.flush = _empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device=device)
        self.overhead_ms = 0.0
        self.overhead_ms = self._calibrate()

    def _calibrate(self) -> float:
        """Host time minus event time of a trivial op: the fixed cost of the harness's own launch and sync."""
        tiny = self.flush[:1]
        samples = []
        for _ in range(30):
            event_ms, wall_ms = self._one(lambda: _zero(tiny), ())
            samples.append(wall_ms - event_ms)
        return statistics.median(samples[5:])

    def _one(self, fn, inputs):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _synchronize()
        t0 = _perf_counter()
        _zero(self.flush)
        _sleep(HOST_SLACK_CYCLES)  # the GPU flushes L2 and then idles while the host issues the call: no launch gap
        _record(start)
        result = fn(*inputs)
        _record(end)
        _synchronize()
        t1 = _perf_counter()
        self.last_result = result
        return _elapsed(start, end), (t1 - t0) * 1e3

    def time(self, fn, source, check=None) -> dict:
        """Median time of fn. source is a feed, source(n) -> inputs of rep n, or a list of fixed input sets copied
        afresh each rep; check(result, n) runs on every timed output, outside the timed region."""
        counter = [0]

        def rep():
            n = counter[0]
            counter[0] += 1
            inputs = _inputs_for(source, n)
            with collector_paused():
                try:
                    event_ms, wall_ms = self._one(fn, inputs)
                    if check is not None:
                        check(self.last_result, n)
                finally:
                    # Only now, checked, may the call's objects go: dropping one can run the candidate's code.
                    self.last_result = inputs = None
            return event_ms, wall_ms

        started = _perf_counter()
        warm = [rep() for _ in range(3)]
        per_rep_s = max((_perf_counter() - started) / 3, 1e-6)
        reps = int(min(self.max_reps, max(self.min_reps, self.budget_s / per_rep_s)))
        samples = [rep() for _ in range(reps)]
        events = [e for e, _ in samples]
        walls = [w for _, w in samples]
        event_ms = statistics.median(events)
        wall_ms = statistics.median(walls)
        host_bound = max(wall_ms - self.overhead_ms, 0.0)
        hidden = host_bound > 1.25 * event_ms + 0.02
        ms = max(event_ms, host_bound) if hidden else event_ms
        quartiles = statistics.quantiles(events, n=4) if len(events) >= 4 else [event_ms] * 3
        return {
            "ms": ms,
            "event_ms": event_ms,
            "host_ms": wall_ms,
            "overhead_ms": self.overhead_ms,
            "hidden_work": hidden,
            "reps": reps,
            "warmup": len(warm),
            "iqr_rel": (quartiles[2] - quartiles[0]) / event_ms if event_ms > 0 else 0.0,
        }


def cpu_time(fn, source, check=None, budget_s: float = 1.0, max_reps: int = 20) -> dict:
    """Host-clock median under the Triton interpreter: honest CPU time, not a GPU figure. source and check as in
    GpuTimer.time."""
    times = []
    started = _perf_counter()
    n = 0
    while n < 2 or (n < max_reps and _perf_counter() - started < budget_s):
        inputs = _inputs_for(source, n)
        with collector_paused():
            try:
                t0 = _perf_counter()
                result = fn(*inputs)
                times.append((_perf_counter() - t0) * 1e3)
                if check is not None:
                    check(result, n)
            finally:
                result = inputs = None  # checked before anything of the call is dropped (a drop can run code)
        n += 1
    return {"ms": statistics.median(times), "reps": len(times), "clock": "cpu-interpreter"}
