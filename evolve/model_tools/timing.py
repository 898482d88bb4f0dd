"""Times: each node of a graph (an fx.Interpreter that times every op it runs), and a whole forward. On a GPU a node's
time is the summed duration of the kernels it launched, as torch's profiler saw them on the device (no launch or
synchronize overhead counted, so a small op is not inflated); a forward's is CUDA events around it. On the CPU, the
host clock. The median of the repeats."""
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


LABEL = "evolve_node:"  # the profiler range around each timed node: LABEL + its index in the graph


def time_nodes(graph_module, inputs, device: str, repeats: int = 10, warmup: int = 2) -> dict:
    """node -> its median time in ms over `repeats` forwards (after `warmup` untimed ones)."""
    if str(device).startswith("cuda"):
        times = profiled_times(graph_module, inputs, repeats, warmup, gpu=True)
        if any(times.values()):
            return times
    return clocked_times(graph_module, inputs, device, repeats, warmup)


def profiled_times(graph_module, inputs, repeats: int, warmup: int, gpu: bool) -> dict:
    """node -> the median over `repeats` forwards of what torch's profiler saw it take, in ms: its kernels' summed
    time on the GPU with gpu, else its time on the host (the CPU's figure, for tests of the bookkeeping)."""
    import torch
    import torch.fx
    from torch.profiler import ProfilerActivity, profile, record_function

    nodes = [node for node in graph_module.graph.nodes if is_compute(node)]
    index = {node: i for i, node in enumerate(nodes)}

    class Labeled(torch.fx.Interpreter):
        def run_node(self, node):
            if node not in index:
                return super().run_node(node)
            with record_function(f"{LABEL}{index[node]}"):
                return super().run_node(node)

    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if gpu else [ProfilerActivity.CPU]
    with torch.no_grad():
        for _ in range(warmup):
            torch.fx.Interpreter(graph_module).run(*inputs)
        if gpu:
            torch.cuda.synchronize()
        with profile(activities=activities) as prof:
            for _ in range(repeats):
                Labeled(graph_module).run(*inputs)
            if gpu:
                torch.cuda.synchronize()
    return medians_of_ranges(prof.events(), nodes, "device_time_total" if gpu else "cpu_time_total")


def medians_of_ranges(events, nodes: list, attribute: str) -> dict:
    """node -> the median in ms of `attribute` (microseconds) over the host-side profiler ranges labelled for it
    (the GPU's copy of each range, where the profiler keeps one, is left out so that nothing counts twice)."""
    from torch.autograd import DeviceType

    values: dict = defaultdict(list)
    for event in events:
        if event.name.startswith(LABEL) and event.device_type == DeviceType.CPU:
            values[nodes[int(event.name[len(LABEL):])]].append(getattr(event, attribute) / 1e3)
    return {node: statistics.median(found) for node, found in values.items()}


def clocked_times(graph_module, inputs, device: str, repeats: int = 10, warmup: int = 2) -> dict:
    """node -> its median time in ms, from the clock around each call (CUDA events and a synchronize on a GPU)."""
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
