"""The seeds of an evaluation's inputs: the problem's own seeds mixed with a secret that only the measurer and the
parent know (harness/measurer/inputs.py makes the inputs from them), and the offsets of the harness's own inputs."""
from __future__ import annotations

import hashlib

# Seed offsets of the harness's own inputs (mixed with the evaluation's secret): the problem's seeds are small.
BENCH_SEED = 1 << 40  # + a running count: every timed call of a candidate sees new values
BASELINE_SEED = 1 << 41  # two fixed sets for timing the library baselines, which are not candidates
COMPILE_SEED = 1 << 42  # the compile rung's calls
WARM_SEED = 1 << 43  # the call before a benchmark case's windows


def mix(secret: int, seed: int, case_seed: int | None = None) -> int:
    text = f"{secret}:{seed}" if case_seed is None else f"{secret}:{case_seed}:{seed}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")
