"""Lanes on a Ray cluster (`evolve run --cluster auto|ADDRESS`): one Ray actor per GPU, each evaluating candidates one
at a time through the harness on its node. The driver (evolve run) keeps the loop and alone writes the archive; an
actor gets a candidate's source and returns its verdict as JSON, with the compiler artifacts when asked.

Fault handling is Ray's own: the actors are created with `max_restarts` and `max_task_retries`, so an actor whose
process or node dies is restarted (on another node if its own is gone) and its evaluation retried there. When Ray
gives up on a call, the lane raises LaneFault and the pipeline puts the candidate back in line for the other lanes.
Every node needs evolve installed and the problem folder at the same path as on the driver (a shared filesystem, or
Ray's runtime_env working_dir).
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import tempfile
from pathlib import Path

from .pipeline import LaneFault, harness_fault

MAX_RESTARTS = 4  # an actor's process or node lost: restarted this many times
MAX_TASK_RETRIES = 2  # its evaluation in flight retried on the restarted actor
MAX_ARTIFACTS = 64 << 20  # compiler artifacts sent back per candidate


class ClusterError(RuntimeError):
    """The cluster cannot be used (Ray missing, no address answering, no GPU); the message says what to do."""


def _resolve(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


class _Evaluator:
    """The body of a lane actor (Ray wraps it with ray.remote in make_lanes)."""

    def __init__(self, evaluate_spec: str = "evolve.harness:evaluate"):
        self.evaluate_spec = evaluate_spec

    def pid(self) -> int:
        return os.getpid()

    def ping(self) -> bool:
        return True

    def device(self, device: str) -> str:
        from .harness.parent.ladder import device_name

        return device_name(device)

    def evaluate(self, name: str, source: str, problem_dir: str, options: dict) -> dict:
        """A candidate's verdict (JSON) and its dumped artifacts ({file name: bytes}), evaluated on this node."""
        from .harness import EvalOptions

        evaluate = _resolve(self.evaluate_spec)
        with tempfile.TemporaryDirectory(prefix="evolve-lane-") as tmp:
            path = Path(tmp) / name
            path.write_text(source)
            dump = Path(tmp) / "dump" if options.get("dump_dir") else None
            fields = {f.name for f in dataclasses.fields(EvalOptions)}
            opts = EvalOptions(**{**{k: v for k, v in options.items() if k in fields},
                                  "dump_dir": str(dump) if dump else None, "gpu": None})
            verdict = evaluate(path, problem_dir, opts)
            files, total = {}, 0
            for f in sorted(dump.iterdir()) if dump and dump.is_dir() else ():
                size = f.stat().st_size
                if f.is_file() and total + size <= MAX_ARTIFACTS:
                    files[f.name] = f.read_bytes()
                    total += size
            return {"verdict": verdict.to_json(), "artifacts": files}


class RayLane:
    """A pipeline lane whose evaluations run in a Ray actor (one GPU of the cluster)."""

    def __init__(self, name: str, actor, problem_path, options_fn, timeout_s: float):
        self.name, self.actor, self.problem_path = name, actor, str(problem_path)
        self._options, self.timeout_s = options_fn, timeout_s

    def evaluate(self, job):
        import ray
        from .harness import Verdict

        options = self._options(job, None)
        payload = {k: v for k, v in dataclasses.asdict(options).items() if k != "cache_dir"}  # the node's own
        try:
            reply = ray.get(self.actor.evaluate.remote(job.path.name, job.path.read_text(), self.problem_path,
                                                       payload), timeout=self.timeout_s)
        except (ray.exceptions.RayError, TimeoutError) as exc:  # Ray gave up on the actor or its node
            raise LaneFault(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:400]) from None
        verdict = Verdict.from_json(reply["verdict"])
        if options.dump_dir and reply["artifacts"]:
            dest = Path(options.dump_dir)
            dest.mkdir(parents=True, exist_ok=True)
            for fname, data in reply["artifacts"].items():
                if Path(fname).name == fname and not fname.startswith("."):
                    (dest / fname).write_bytes(data)
        reason = harness_fault(verdict)
        if reason:
            raise LaneFault(reason)
        return verdict

    def probe(self) -> bool:
        import ray

        try:
            return bool(ray.get(self.actor.ping.remote(), timeout=60))
        except Exception:  # noqa: BLE001 - an actor Ray cannot reach fails its check
            return False

    def reset(self) -> None:
        pass

    def device(self, device: str) -> str:
        """The name of the card this lane's actor evaluates on (the run's device)."""
        import ray

        return ray.get(self.actor.device.remote(device), timeout=300)


def connect(address: str, **init):
    """ray.init on a cluster address ('auto': the one this machine belongs to); a clear error when Ray is missing."""
    try:
        import ray
    except ImportError:
        raise ClusterError("--cluster needs Ray: pip install 'evolve[cluster]' (or pip install ray)") from None
    if not ray.is_initialized():
        import signal
        import threading

        main = threading.current_thread() is threading.main_thread()
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
        try:
            ray.init(address=None if address == "local" else address, include_dashboard=False,
                     log_to_driver=False, **init)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ClusterError(f"cannot join the Ray cluster at {address!r}: {str(exc).splitlines()[0]} (start one "
                               f"with `ray start --head`, or give its address)") from None
        finally:
            for sig, handler in handlers.items():  # ray.init makes SIGTERM exit at once: a run stops as on Ctrl-C
                signal.signal(sig, handler)
    return ray


def make_lanes(address: str, problem_path, options_fn, timeout_s: float, gpus: int | None = None,
               evaluate_spec: str = "evolve.harness:evaluate", cpu_lanes: int = 0, **init) -> list[RayLane]:
    """One actor per GPU of the cluster (or `gpus` of them); cpu_lanes > 0 makes that many CPU actors instead (the
    interpreter, and tests on a machine without a GPU)."""
    ray = connect(address, **init)
    if cpu_lanes:
        count, resources = cpu_lanes, {"num_cpus": 1}
    else:
        count = int(ray.cluster_resources().get("GPU", 0)) if gpus is None else gpus
        if count < 1:
            raise ClusterError(f"the Ray cluster at {address} has no GPU: start its nodes with GPUs "
                               f"(ray start --num-gpus N), or run without --cluster")
        resources = {"num_gpus": 1}
    actor = ray.remote(max_restarts=MAX_RESTARTS, max_task_retries=MAX_TASK_RETRIES, **resources)(_Evaluator)
    return [RayLane(f"ray{i}", actor.remote(evaluate_spec), problem_path, options_fn, timeout_s)
            for i in range(count)]
