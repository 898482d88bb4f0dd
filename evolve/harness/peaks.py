"""Device ceilings for the roofline: copy bandwidth and matmul throughput, measured once per device and cached."""
from __future__ import annotations

import json
from pathlib import Path


def measure(timer, device) -> dict:
    """Memory bandwidth (bytes per second: the faster of a copy, counting bytes read and written, and a read-only
    reduction, since HBM reads alone run faster than a mix of reads and writes) and dense matmul FLOP/s in bf16 and
    fp32 (no TF32)."""
    import torch

    n = 1 << 29  # 2 GiB of fp32 per buffer
    src = torch.empty(n, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    nbytes = src.numel() * src.element_size()
    copy = timer.time(lambda a, b: b.copy_(a), [(src, dst)])
    read = timer.time(lambda a: torch.sum(a), [(src,)])
    bandwidth = max(2 * nbytes / (copy["event_ms"] * 1e-3), nbytes / (read["event_ms"] * 1e-3))
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


def store(cache_dir: Path, key: str, value: dict, name: str = "peaks.json") -> None:
    path = Path(cache_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[key] = value
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)
