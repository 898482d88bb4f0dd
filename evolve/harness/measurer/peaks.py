"""Device ceilings for the roofline: copy bandwidth and matmul throughput, measured per device and kept; a kept entry
is measured again once it is older than the measurer's RECHECK_S, each peak the highest seen."""
from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path


def measure(timer, device) -> dict:
    """Memory bandwidth (bytes per second: the faster of a copy, counting bytes read and written, and read-only
    reductions, torch's and a plain Triton one, since HBM reads alone run faster than a mix of reads and writes) and
    dense matmul FLOP/s in bf16 and fp32 (no TF32)."""
    import torch

    n = 1 << 29  # 2 GiB of fp32 per buffer
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    nbytes = src.numel() * src.element_size()
    copy = timer.time(lambda a, b: b.copy_(a), [(src, dst)])
    reads = [timer.time(lambda a: torch.sum(a), [(src,)])["event_ms"]]
    try:
        reads += [timer.time(lambda a, b, c=chunk: _read_rows(a, b, c), [(src, dst)])["event_ms"]
                  for chunk in (4096, 8192, 32768)]
    except Exception:  # noqa: BLE001 - Triton unusable here: torch's own reduction is the read-only figure
        pass
    bandwidth = max(2 * nbytes / (copy["event_ms"] * 1e-3), nbytes / (min(reads) * 1e-3))
    del src, dst
    flops = {}
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for name, dtype in (("bfloat16", torch.bfloat16), ("float32", torch.float32)):
            size = 8192
            a = torch.randn(size, size, device=device, dtype=dtype)
            b = torch.randn(size, size, device=device, dtype=dtype)
            result = timer.time(torch.matmul, [(a, b)])
            flops[name] = 2 * size ** 3 / (result["event_ms"] * 1e-3)
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    flops["float16"] = flops["bfloat16"]
    torch.cuda.empty_cache()
    return {"bandwidth": bandwidth, "flops": flops}


_READ_KERNEL = []


def _read_rows(src, dst, chunk: int) -> None:
    """A plain Triton read of src, one program per chunk of it, each writing one float32 sum: reads at the rate an
    honest reduction kernel reaches (on the H200, 2026-12-01: torch.sum 4.39 TB/s, a one-row-per-program Triton row
    sum 4.58 TB/s, a copy 4.25 TB/s counting both directions)."""
    import triton
    import triton.language as tl

    if not _READ_KERNEL:
        @triton.jit
        def read_rows_kernel(x_ptr, out_ptr, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
            row = tl.program_id(0).to(tl.int64)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for start in range(0, CHUNK, BLOCK):
                acc += tl.load(x_ptr + row * CHUNK + start + tl.arange(0, BLOCK))
            tl.store(out_ptr + row, tl.sum(acc, axis=0))

        _READ_KERNEL.append(read_rows_kernel)
    _READ_KERNEL[0][(src.numel() // chunk,)](src, dst, CHUNK=chunk, BLOCK=1024, num_warps=4)


def highest(kept, measured: dict) -> dict:
    """Peaks with one more measurement: each the higher of the two (another process's work on the card can only
    make a peak come out low). kept: an earlier entry, or anything else when there is none."""
    if not isinstance(kept, dict):
        return measured
    try:
        bandwidth = max(float(kept["bandwidth"]), float(measured["bandwidth"]))
        flops = {k: max(float(kept["flops"].get(k, 0.0)), float(v)) for k, v in measured["flops"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return measured
    if not all(math.isfinite(x) and x > 0 for x in (bandwidth, *flops.values())):
        return measured
    return {**measured, "bandwidth": bandwidth, "flops": flops}


_STORING = threading.Lock()  # evaluation lanes on several GPUs store from threads of one process


def store(cache_dir: Path, key: str, value: dict, name: str = "peaks.json") -> None:
    path = Path(cache_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with _STORING:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data[key] = value
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")  # one writer per process at a time, under the lock
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
