"""What each process may say: the schemas every message is checked against on arrival (harness/shared/wire.py).

RUNNER: what the measurer accepts from a runner. Before the candidate is imported the runner is harness code, so
`ready` (its jail, device and versions) is believed; after that nothing is, and every message is only data to check.
MEASURER: what the parent accepts from the measurer (signed as well, harness/parent/sandbox.py).
"""
from __future__ import annotations

OPT_INT = (int, None)
OPT_STR = (str, None)
OPT_FLOAT = (float, None)

KERNEL = {"name": str, "num_warps": OPT_INT, "num_stages": OPT_INT, "smem": OPT_INT, "regs": OPT_INT,
          "spills": OPT_INT, "arch": OPT_STR, "local_bytes": OPT_INT, "files": [str]}
OUTPUT = {"handle": str, "offset": int, "nbytes": int, "shape": [int], "dtype": str}
# an output that is a buffer the task handed out (GPU MODE's pmpp_v2): the index of that input, read where it lies
HANDED_OUTPUT = {**OUTPUT, "input": int}

RUNNER = {
    "ready": {"kind": str, "jail": str, "torch": str, "language": str, "version": str, "device": str, "warm_s": float},
    "ack": {"kind": str},
    "loaded": {"kind": str, "seconds": float},
    "compiled": {"kind": str, "seconds": float, "compile_seconds": float, "cache_hits": int, "fresh": int,
                 "calls_seconds": float, "inputs_seconds": float,
                 "describe_seconds": float, "kernels": [KERNEL], "error": str},
    "outputs": {"kind": str, "call": int, "outputs": [[(OUTPUT, HANDED_OUTPUT)]]},
    "checked": {"kind": str, "call": int},
    "precompiled": {"kind": str, "seconds": float, "sets": int, "kernels": int, "launchers": int, "error": str},
    "failed": {"kind": str, "reason": str, "log": str, "seconds": float},
}

# The fields of a benchmark row the parent computes the roofline from (a row holds other figures as well).
SHAPE_ROW = {"case": str, "dtype": str, "ms": float, "bytes": int, "flops": int}

MEASURER = {
    "device": {"kind": str, "mode": str, "device": str, "torch": str, "triton": str, "jail": str, "uuid": str},
    "setup": {"kind": str, "job_at": float, "warm_s": float, "runner_warm_s": float, "prepare_s": float,
              "prepare_split": "any"},
    "peaks": {"kind": str, "key": str, "cached": bool, "bandwidth": float,
              "flops": {"bfloat16": float, "float32": float, "float16": float}},
    "baseline": {"kind": str, "key": str, "case": str, "torch_ms": OPT_FLOAT, "compile_ms": OPT_FLOAT,
                 "compile_error": OPT_STR},
    "plan": {"kind": str, "key": str, "case": OPT_STR, "k": OPT_INT, "one_ms": OPT_FLOAT, "many_ms": OPT_FLOAT,
             "hops_ms": OPT_FLOAT},  # a window calibration, kept per card model (case None: the switches)
    "rung": {"kind": str, "name": str, "ok": bool, "reason": OPT_STR, "seconds": float, "metrics": "any"},
    "skip": {"kind": str, "name": str, "reason": str},  # a rung the mode cannot run (a language without interpreter)
    "runner_lost": {"kind": str, "rung": str, "runner": str, "detail": str},
    "lease": {"kind": str, "act": str},  # take | give | evict (harness/parent/lease.py)
    "done": {"kind": str},
}
