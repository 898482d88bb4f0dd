"""Times: each node of a graph (an fx.Interpreter that clocks every op it runs), and a whole forward. On a GPU each
is CUDA events around the call with a synchronize after it; on the CPU, the host clock. The median of the repeats."""
from __future__ import annotations

import statistics
import time
from collections import defaultdict

from .graph import is_compute


class _HostClock:
    def start(self):
        return time.perf_counter()

    def stop(self, began) -> float:
        return (time.perf_counter() - began) * 1e3


class _CudaClock:
    def start(self):
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def stop(self, began) -> float:
        import torch

        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        return began.elapsed_time(end)


def clock_for(device: str):
    return _CudaClock() if str(device).startswith("cuda") else _HostClock()


def time_nodes(graph_module, inputs, device: str, repeats: int = 10, warmup: int = 2) -> dict:
    """node -> its median time in ms over `repeats` forwards (after `warmup` untimed ones)."""
    import torch
    import torch.fx

    clock = clock_for(device)
    times: dict = defaultdict(list)

    class Timed(torch.fx.Interpreter):
        def run_node(self, node):
            if not is_compute(node):
                return super().run_node(node)
            began = clock.start()
            result = super().run_node(node)
            times[node].append(clock.stop(began))
            return result

    with torch.no_grad():
        for _ in range(warmup):
            torch.fx.Interpreter(graph_module).run(*inputs)
        for _ in range(repeats):
            Timed(graph_module).run(*inputs)
    return {node: statistics.median(values) for node, values in times.items()}


def time_forward(function, inputs, device: str, repeats: int = 10, warmup: int = 2) -> float:
    """The median time in ms of function(*inputs)."""
    import torch

    clock = clock_for(device)
    values = []
    with torch.no_grad():
        for _ in range(warmup):
            function(*inputs)
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        for _ in range(repeats):
            began = clock.start()
            function(*inputs)
            values.append(clock.stop(began))
    return statistics.median(values)
