"""The measurer: the trusted process of an evaluation. `python -m evolve.harness.measurer.measurer JOB OUT MODE GRANT
RUNNER...`.

It never imports candidate code, nor a foreign problem's (a GPU MODE or KernelBench problem's code runs in a jailed
process of its own, harness/runner/problem_process.py, which it asks). It makes every input (harness/measurer/inputs.py:
from the problem's seeds mixed with a secret only it and the parent know) and every reference, measures the device's
peaks and the library baselines before any runner has imported the candidate (harness/measurer/calibration.py), drives
the runner through the rungs (harness/measurer/rungs.py), reads the outputs back itself, compares them
(harness/measurer/checks.py), and times the calls from outside the runner (harness/measurer/exchange.py). Its
observations go to the parent over a pipe the runner does not have, signed with a key that reached it on the job pipe
(harness/measurer/channel.py). The parent turns them into the verdict.

The two modes are two implementations of one role: harness/measurer/gpu_mode.py (windows on the card, under its timing
lease) and harness/measurer/cpu_mode.py (the interpreter on the host clock).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

import torch

from ..shared import lifeline
from ..shared.protocol import RUNNER
from ..shared.wire import Closed, Link, short_error
from .channel import Channel
from .exchange import Fail, ProblemFault, RunnerLost


def _read_job(fd: int) -> dict:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def _warm_gpu() -> None:
    """The CUDA context, and fake tensors' first use (seconds of modules: compiling ahead describes shapes with them),
    paid before the job arrives."""
    torch.cuda.init()
    torch.empty(1, device="cuda")
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        torch.randn(2, 2, device="cuda")


def main(argv) -> int:
    started = time.time()
    mode = argv[3]
    grant_fd = int(argv[4])  # the card's timing lease: a byte from the parent when it is this evaluation's
    specs = [spec.split(":") for spec in argv[5:]]  # per runner: name, read fd, write fd, pid
    lifeline.watch(pgids=[int(pid) for *_, pid in specs])  # the runners die with the parent too
    if mode == "gpu":
        _warm_gpu()
    warm_s = time.time() - started
    job = _read_job(int(argv[1]))
    job_at = time.time()
    channel = Channel(int(argv[2]), bytes.fromhex(job["key"]))
    links = {name: Link(int(read_fd), int(write_fd), RUNNER) for name, read_fd, write_fd, _ in specs}
    sys.setrecursionlimit(10000)
    if mode == "gpu":
        from .gpu_mode import GpuMeasurer as Mode
    else:
        from .cpu_mode import CpuMeasurer as Mode
    measurer = Mode(job, channel, links, grant_fd, {name: int(pid) for name, *_, pid in specs})
    try:
        prepare_started = time.perf_counter()
        measurer.hello()
        measurer.prepare()
        runner_warm = max(float(r["warm_s"]) for r in measurer.ready.values())
        channel.send({"kind": "setup", "job_at": job_at, "warm_s": round(warm_s, 3), "runner_warm_s": runner_warm,
                      "prepare_s": round(time.perf_counter() - prepare_started, 3),
                      "prepare_split": {k: round(v, 3) for k, v in measurer.prepare_split.items()}})
        measurer.ladder()
    except RunnerLost as exc:
        channel.send({"kind": "runner_lost", "rung": "load", "runner": exc.runner, "detail": str(exc)})
    except ProblemFault as exc:  # the problem's generator, in the set-up's calibrations: the parent judges whose fault
        channel.rung("load", False, str(exc), generator_failed=exc.details)
    except Fail as exc:
        channel.rung("load", False, f"the runner failed to start: {exc}")
    except Exception as exc:  # noqa: BLE001 - e.g. device memory another process holds: not the candidate's doing
        channel.rung("load", False, f"the harness could not prepare the device before loading the candidate: "
                                    f"{short_error(exc)}", log=traceback.format_exc()[-4000:])
    finally:
        for link in links.values():
            try:
                link.send({"kind": "quit"})
            except Closed:
                pass
        measurer.pool.trim()
        if hasattr(measurer.reference, "close"):  # a foreign problem's process (harness/measurer/problem_link.py)
            measurer.reference.close()
        channel.send({"kind": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
