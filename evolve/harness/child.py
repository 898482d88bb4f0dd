"""The sandboxed child: `python -m evolve.harness.child IN_FD OUT_FD`.

It reads one job from IN_FD (a pipe only the parent writes), closes it, prepares everything it needs from trusted
code (device, reference, peaks, baselines, captured functions), and only then imports the candidate. Observations go
back over OUT_FD as JSON lines, each signed with an HMAC key that arrived with the job, so text the candidate prints
or writes to a guessed descriptor cannot pass for a message. The parent, not this process, turns the observations
into verdicts; this process never decides that a candidate passed.
"""
from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

_write = os.write
_dumps = json.dumps
_hmac_new = hmac.new
_sha256 = hashlib.sha256
_perf_counter = time.perf_counter


class Channel:
    def __init__(self, fd: int, key: bytes):
        self._send = self._make_sender(fd, key)

    @staticmethod
    def _make_sender(fd, key):
        def send(message: dict) -> None:
            payload = _dumps(message, default=str).encode()
            mac = _hmac_new(key, payload, _sha256).hexdigest().encode()
            data = mac + b" " + payload + b"\n"
            while data:
                data = data[_write(fd, data):]

        return send

    def send(self, message: dict) -> None:
        self._send(message)

    def rung(self, name, ok, reason=None, seconds=0.0, **metrics):
        self._send({"kind": "rung", "name": name, "ok": ok, "reason": reason, "seconds": round(seconds, 4),
                    "metrics": metrics})


def _read_job(fd: int) -> dict:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def _short_exception(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__


def _load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def static_rung(ch: Channel, job: dict, problem, rung: str = "load") -> bool:
    """The static check, before any candidate code runs (and before the GPU is prepared for it)."""
    from .static_check import screen, summary

    started = _perf_counter()
    problems = screen(job["candidate"], problem.forbid_calls, problem.forbid_modules, job.get("static_check", True))
    if problems:
        ch.rung(rung, False, summary(problems), _perf_counter() - started, violations=problems)
        return False
    return True


def import_rung(ch: Channel, job: dict, rung: str = "load"):
    """Import the candidate from its real file (Triton reads kernel source with inspect). Returns the module."""
    started = _perf_counter()
    try:
        module = _load_module("candidate", Path(job["candidate"]))
    except BaseException as exc:  # noqa: BLE001 - anything the candidate raises at import is its failure
        ch.rung(rung, False, f"import failed: {_short_exception(exc)}", _perf_counter() - started,
                log=traceback.format_exc()[-4000:])
        return None
    if not callable(getattr(module, "custom_kernel", None)):
        ch.rung(rung, False, "custom_kernel is not a function", _perf_counter() - started)
        return None
    return module


def compile_rung(ch: Channel, job: dict, ctx) -> bool:
    """Call custom_kernel once per test case; every launch compiles (for sm_90 when there is no GPU)."""
    from triton.compiler.errors import CompilationError

    from .launches import describe_all, dump
    from .rungs import Fail

    log = ctx.launch_log
    started = _perf_counter()
    threads = threading.active_count()
    error = None
    try:
        for case in ctx.problem.tests:
            ctx.compile_call(case)
    except CompilationError as exc:
        ch.rung("compile", False, f"CompilationError: {str(exc).strip().splitlines()[-1][:300]}",
                _perf_counter() - started, log=str(exc)[-20000:])
        return False
    except Fail as exc:
        ch.rung("compile", False, str(exc), _perf_counter() - started)
        return False
    except BaseException as exc:  # noqa: BLE001
        error = exc
    seconds = _perf_counter() - started
    if threading.active_count() > threads:
        ch.rung("compile", False, "custom_kernel left a background thread running", seconds)
        return False
    if not log.kernels:
        if error is not None:
            reason = f"custom_kernel raised before any kernel compiled: {_short_exception(error)}"
            if "CompilationError" in type(error).__name__ or "compil" in str(error).lower()[:200]:
                reason = f"CompilationError: {_short_exception(error)}"
            ch.rung("compile", False, reason, seconds, log=traceback.format_exception(error)[-1][-20000:])
        else:
            ch.rung("compile", False, "no Triton kernel launched by custom_kernel: the computation must run in "
                                      "@triton.jit kernels", seconds)
        return False
    compiled = list(log.kernels.values())
    kernels = describe_all(compiled, Path(job["work"]), sass=bool(job.get("dump")))
    for index, (kernel, info) in enumerate(zip(compiled, kernels)):
        if job.get("dump"):
            info["files"] = dump(kernel, info, Path(job["dump"]), index)
        info.pop("_sass", None)
    seconds = _perf_counter() - started  # compiling and reading back the cubins
    ch.rung("compile", True, None, seconds, kernels=kernels, compile_seconds=round(log.compile_seconds, 3))
    if error is not None and "CUDA error" in str(error):
        # The kernels compiled but running them broke the CUDA context; nothing more can run in this process.
        ch.rung("run", False, f"crashed: {_short_exception(error)}", _perf_counter() - started)
        return False
    return True


def _warm_up(mode: str) -> None:
    """Everything that does not depend on the job: imports, the CUDA context, the dispatch-mode machinery."""
    from . import rungs

    if mode == "gpu":
        import torch

        torch.cuda.init()
    rungs.warm_up(mode)


def main(argv) -> int:
    started = time.time()
    _warm_up(argv[3] if len(argv) > 3 else "gpu")
    warm_s = time.time() - started
    job = _read_job(int(argv[1]))
    job_at = time.time()
    ch = Channel(int(argv[2]), bytes.fromhex(job["key"]))
    sys.setrecursionlimit(10000)
    from . import rungs

    ctx = rungs.Context(job, ch)
    ch.send({"kind": "device", **ctx.device_info()})
    # In a job without a load rung (the interpreter child after the compile child), a failure to load is charged to
    # the job's first rung: it is still a failure, never a silent pass.
    load = "load" if "load" in job["rungs"] else job["rungs"][0]
    if not static_rung(ch, job, ctx.problem, load):
        ch.send({"kind": "done"})
        return 0
    prepare_started = _perf_counter()
    if job["mode"] == "gpu":
        ctx.prepare_gpu()
    ctx.prepare_cases()
    ch.send({"kind": "setup", "job_at": job_at, "warm_s": round(warm_s, 3),
             "prepare_s": round(_perf_counter() - prepare_started, 3)})
    ctx.launch_log.install(job["mode"])
    ctx.seal()
    load_started = _perf_counter()
    module = import_rung(ch, job, load)
    if module is None or not ctx.untouched(load):
        ch.send({"kind": "done"})
        return 0
    ctx.candidate = module
    if load == "load":
        ch.rung("load", True, None, _perf_counter() - load_started)
    steps = {"compile": lambda: compile_rung(ch, job, ctx), "run": ctx.run_rung,
             "correctness": ctx.correctness_rung, "benchmark": ctx.benchmark_rung}
    for name in job["rungs"]:
        if name not in steps:
            continue
        try:
            if not steps[name]():
                break
        except BaseException as exc:  # noqa: BLE001 - e.g. a CUDA context the candidate broke
            ch.rung(name, False, f"crashed: {_short_exception(exc)}")
            break
    ch.send({"kind": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
