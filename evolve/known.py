"""Verdicts of a problem's own kernels (its seeds and correct solutions), kept on this machine.

A new archive starts by evaluating the problem's material; on a machine that has already evaluated the same file for
the same problem, device, package versions and evaluation options, the verdict kept then is recorded instead, so a
run's minutes go to kernels nobody has measured here. A run that keeps each candidate's compiler output
(`--artifacts`, the default) evaluates its material itself: a kept verdict brings none. Only the search's parent writes the file (in the evaluation
cache folder, where no runner can write), and only what the harness itself returned.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

from .harness import Verdict

FILE = "material.json"
MAX_ENTRIES = 500  # the oldest go first
_LOCK = threading.Lock()


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes() if path.is_file() else b""
    except OSError:
        return b""


def key(source: str, problem, device: str, versions: dict, options) -> str:
    """What a kept verdict is good for: this source, this problem's definition, this device, these package versions
    and the evaluation options that change a verdict."""
    digest = hashlib.sha256()
    folder = Path(problem.path)
    parts = [source.encode(), _bytes(Path(problem.reference_path))]
    parts += [_bytes(folder / name) for name in ("problem.toml", "task.yml")] if folder.is_dir() else [_bytes(folder)]
    chosen = {k: getattr(options, k, None) for k in ("device", "timeout_s", "max_rss_gb", "bench_budget_s",
                                                      "static_check", "per_gpu", "sass")}
    chosen["dump"] = getattr(options, "dump_dir", None) is not None  # a kept verdict brings no compiler dumps
    parts += [device.encode(), json.dumps(versions, sort_keys=True).encode(), json.dumps(chosen, sort_keys=True,
                                                                                         default=str).encode()]
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:40]


def _read(cache_dir) -> dict:
    try:
        data = json.loads((Path(cache_dir) / FILE).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def recall(cache_dir, entry_key: str) -> Verdict | None:
    """The verdict kept for this key, or None (none kept, or one that no longer reads)."""
    entry = _read(cache_dir).get(entry_key)
    try:
        return Verdict.from_json(entry["verdict"]) if isinstance(entry, dict) else None
    except (KeyError, TypeError, ValueError):
        return None


def keep(cache_dir, entry_key: str, verdict: Verdict) -> None:
    """Keep a verdict the harness returned for the problem's own kernel (written whole or not at all)."""
    path = Path(cache_dir) / FILE
    with _LOCK:
        data = _read(cache_dir)
        data[entry_key] = {"verdict": verdict.to_json(), "kept": time.time()}
        if len(data) > MAX_ENTRIES:
            for old in sorted(data, key=lambda k: data[k].get("kept", 0) if isinstance(data[k], dict) else 0)[
                    : len(data) - MAX_ENTRIES]:
                data.pop(old)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{FILE}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(data))
        partial.replace(path)
