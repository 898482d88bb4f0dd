"""The lanes a run evaluates on (pipeline.py): one per GPU in --gpus, or every visible one, --per-gpu to a card; one
lane without a GPU; Ray actors, one per GPU of a cluster, with --cluster (cluster.py)."""
from __future__ import annotations

import os

# candidates waiting for a lane beyond one per lane: none, so a repair follows its
# failure and a hint reaches the very next prompt (this process archives a verdict in a fraction of a second)
QUEUE_AHEAD = 0


def make_pipeline(config, problem, evaluate, options, emit, probe: bool):
    """(the pipeline, CPU threads per evaluation process where lanes share the host, else 0). options(job, gpu):
    a candidate's harness options on a lane; probe: check each card answers before its lane takes work."""
    from .harness.parent.ladder import gpu_available
    from .pipeline import Pipeline, ThreadLane, probe_gpu, visible_gpus

    c = config
    if c.cluster:
        return _cluster_pipeline(config, problem, evaluate, options, emit), 0
    gpu = c.eval.device == "cuda" or (c.eval.device == "auto" and gpu_available())
    cards = list(c.gpus) if c.gpus else visible_gpus() if gpu else []
    per = max(1, c.eval.per_gpu)
    named = [(f"gpu{card}", card) for card in cards] or [("cpu" if not gpu else "gpu", None)]
    lanes = [ThreadLane(name if per == 1 else f"{name}.{i + 1}", card, evaluate, problem, options,
                        probe_gpu if card is not None and probe else None)
             for name, card in named for i in range(per)]
    threads = 0
    if len(lanes) > 1 and not c.eval.threads:  # the lanes' evaluations split the host's cores between them
        threads = max(1, len(os.sched_getaffinity(0)) // len(lanes))
    emit({"kind": "lanes", "lanes": [lane.name for lane in lanes], "gpu": gpu})
    return Pipeline(lanes, on_event=emit, depth=len(lanes) + QUEUE_AHEAD), threads


def _cluster_pipeline(config, problem, evaluate, options, emit):
    """Lanes that are Ray actors, one per GPU of the cluster (--cluster)."""
    from . import cluster
    from .pipeline import Pipeline

    c = config
    spec = f"{evaluate.__module__}:{evaluate.__qualname__}"
    if "<" in spec:  # a lambda or a nested function cannot be found by name on another node
        raise ValueError(f"an evaluator for a cluster must be a module-level function, not {spec}")
    lanes = cluster.make_lanes(c.cluster, problem.path, options,
                               timeout_s=c.eval.timeout_s * (1 + cluster.MAX_TASK_RETRIES) + 300,
                               gpus=c.cluster_lanes if c.eval.device != "cpu" else None,
                               cpu_lanes=(c.cluster_lanes or 1) if c.eval.device == "cpu" else 0,
                               evaluate_spec=spec)
    emit({"kind": "lanes", "lanes": [lane.name for lane in lanes], "gpu": c.eval.device != "cpu"})
    return Pipeline(lanes, on_event=emit, depth=len(lanes) + QUEUE_AHEAD)
