"""The jailed process that runs a foreign problem's own code for the measurer (harness/measurer/problem_link.py starts
it and asks). A GPU MODE or KernelBench problem is code from anywhere: its generator, its reference and its check run
here, never in the measurer, which keeps the evaluation's key, its timings and the caches every later evaluation trusts.

`python -m evolve.harness.runner.problem_process READ_FD WRITE_FD GPU`: it jails itself before it imports anything of
the problem (Landlock: it writes only in its own folder, its working directory; traces and signals nothing outside;
opens no TCP connection), then answers one request per frame (harness/shared/frames.py) until its pipe closes. The
inputs it made last are kept, so the measurer names them instead of sending them back."""
from __future__ import annotations

import os
import sys
import time

CACHE_BYTES = 2 << 30  # inputs kept for the requests that name them, the oldest dropped first
BASELINE_CALLS = 10


class Server:
    def __init__(self, problem_path: str):
        from ..shared.formats import load_problem
        from ..shared.formats.gpumode import GpuModeReference
        from ..shared.formats.kernelbench import KernelBenchReference

        self.problem = load_problem(problem_path)
        kinds = {"gpumode": GpuModeReference, "kernelbench": KernelBenchReference}
        self.reference = kinds[self.problem.format](self.problem)
        self.cases = {c.label: c for c in [*self.problem.tests, *self.problem.benchmarks,
                                          *self.problem.cpu_benchmarks]}
        self.kept: dict = {}  # key -> Inputs, oldest first
        self.next_key = 0

    # -- the requests -------------------------------------------------------------------------------------------------
    def generate(self, r):
        from ..shared.formats.base import on_host

        inputs = self.reference.generate(self._case(r), r["seed"], r["device"])
        self.next_key += 1
        self._keep(self.next_key, inputs)
        return {"key": self.next_key, "leaves": on_host(inputs.leaves), "tree": inputs.tree}

    def buffers(self, r):
        return sorted(self.reference.buffers(self._case(r), self._inputs(r)))

    def expects(self, r):
        return [[list(shape), dtype] for shape, dtype in self.reference.expects(self._case(r), self._inputs(r))]

    def reference_outputs(self, r):
        from ..shared.formats.base import on_host

        return on_host(self.reference.reference(self._inputs(r), r["on_cpu"]))

    def check(self, r):
        from ..shared.formats.base import device_of

        inputs = self._inputs(r)
        device = device_of(inputs.leaves)
        outputs = [o.to(device) if hasattr(o, "to") else o for o in r["outputs"]]
        refs = [t.to(device) if hasattr(t, "to") else t for t in r["refs"]]
        return self.reference.check(inputs, tuple(outputs), tuple(refs))

    def profile(self, r):
        return self.reference.profile(self._case(r))

    def shapes_ahead(self, r):
        from ..shared.formats import shapes_ahead

        return shapes_ahead(self.problem, r["secret"], r["device"])

    def time_baselines(self, r):
        """The library's time for the problem's own function on these inputs: eager, and (compiled) under
        torch.compile; milliseconds, the median of BASELINE_CALLS calls. Advice beside a kernel's figure, never
        a verdict."""
        import torch

        samples = [self._inputs(s) for s in r["samples"]]
        function = self.reference.baseline_for(samples[0])
        figures = {"torch_ms": _median_ms(function, samples)}
        if r["compiled"]:
            try:
                figures["compile_ms"] = _median_ms(torch.compile(function, dynamic=False), samples)
            except Exception as exc:  # noqa: BLE001 - torch.compile missing a compiler is no one's fault here
                figures["compile_error"] = str(exc)[:200]
        return figures

    # -- what a request names -----------------------------------------------------------------------------------------
    def _case(self, r):
        return self.cases[r["case"]]

    def _inputs(self, r):
        """The inputs a request names: kept ones by key, else the leaves it sent."""
        from ..shared.formats.base import Inputs, unflatten

        if r.get("key") is not None:
            if r["key"] not in self.kept:
                raise Forgotten()
            return self.kept[r["key"]]
        leaves = tuple(t.to(r["device"]) if hasattr(t, "to") else t for t in r["leaves"])
        tree = r.get("tree")
        return Inputs(leaves, tree, unflatten(leaves, tree) if tree is not None else None, frozenset(r["buffers"]))

    def _keep(self, key: int, inputs) -> None:
        from ..shared.formats.base import nbytes

        self.kept[key] = inputs
        while len(self.kept) > 1 and sum(nbytes(i.leaves) for i in self.kept.values()) > CACHE_BYTES:
            del self.kept[next(iter(self.kept))]


class Forgotten(Exception):
    """A request named inputs by a key no longer kept: the measurer sends them again."""


REQUESTS = {"generate": Server.generate, "buffers": Server.buffers, "expects": Server.expects,
            "reference": Server.reference_outputs, "check": Server.check, "profile": Server.profile,
            "shapes_ahead": Server.shapes_ahead, "time_baselines": Server.time_baselines}


def _median_ms(function, samples) -> float:
    import statistics

    import torch

    cuda = any(getattr(t, "is_cuda", False) for t in samples[0].leaves)
    for sample in samples:  # warm: compiles, autotunes, allocates
        function(*sample.leaves)
    times = []
    for index in range(BASELINE_CALLS):
        leaves = samples[index % len(samples)].leaves
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            begin.record()
            function(*leaves)
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            started = time.perf_counter()
            function(*leaves)
            times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def serve(read_fd: int, write_fd: int, jail_status: str) -> None:
    from ..shared.frames import read_frame, write_frame
    from ..shared.wire import short_error

    first = read_frame(read_fd)
    try:
        server = Server(first["problem"])
        write_frame(write_fd, {"answer": {"jail": jail_status}})
    except Exception as exc:  # noqa: BLE001 - the problem's code at import: the measurer says so
        write_frame(write_fd, {"error": short_error(exc), "out_of_memory": _out_of_memory(exc)})
        return
    while True:
        try:
            request = read_frame(read_fd)
        except EOFError:
            return
        try:
            write_frame(write_fd, {"answer": REQUESTS[request["op"]](server, request)})
        except Forgotten:
            write_frame(write_fd, {"forgotten": True})
        except Exception as exc:  # noqa: BLE001 - the problem's own code: its failure is the answer
            write_frame(write_fd, {"error": short_error(exc), "out_of_memory": _out_of_memory(exc)})


def _out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or \
        "out of memory" in str(exc).lower()


def main(argv) -> int:
    from ..shared import lifeline
    from . import jail

    # before anything of the problem is read: it may write only in its own folder, reach the card only if given one
    # /proc/self: the CUDA driver writes there as it starts (cudaGetDeviceCount fails without it)
    status = jail.apply([os.getcwd(), "/proc/self"], devices=argv[3] == "1")
    lifeline.watch()
    serve(int(argv[1]), int(argv[2]), status)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
