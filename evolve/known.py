"""Verdicts of a problem's own kernels (its seeds and correct solutions), kept on this machine with their compiler
output.

A new archive starts by evaluating the problem's material; on a machine that has already evaluated the same file for
the same problem, device, package versions and evaluation options, the verdict kept then (and the compiler output the
archive stored with it) is recorded instead, so a run's minutes go to kernels nobody has measured here. A verdict kept
without compiler output (by a `--no-artifacts` run) serves only runs that keep none. Only the search's parent writes
these files, only what the harness itself returned and the archive stored, and only where Landlock keeps every
runner out of the evaluation cache folder (as for the harness's own caches).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .harness import Verdict

FILE = "material.json"
FOLDER = "material"  # one zip of compiler output per kept verdict that has some
MAX_ENTRIES = 500  # the oldest go first
MAX_ARTIFACT_BYTES = 512 << 20  # the kept compiler output of all entries, compressed; the oldest go first
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


@dataclass
class Kept:
    verdict: Verdict
    artifacts: dict[str, bytes] | None = None  # None: kept by a run that kept no compiler output


def _zip(cache_dir, entry_key: str) -> Path:
    return Path(cache_dir) / FOLDER / f"{entry_key}.zip"


def _unzip(path: Path, limit: int) -> dict[str, bytes] | None:
    try:
        with zipfile.ZipFile(path) as zipped:
            if sum(info.file_size for info in zipped.infolist()) > limit:
                return None
            return {info.filename: zipped.read(info) for info in zipped.infolist()}
    except (OSError, zipfile.BadZipFile, ValueError):
        return None


def recall(cache_dir, entry_key: str, with_artifacts: bool = False, limit: int = 64 << 20) -> Kept | None:
    """What was kept for this key, or None (none kept, one that no longer reads, or, `with_artifacts`, one kept
    without compiler output)."""
    entry = _read(cache_dir).get(entry_key)
    try:
        verdict = Verdict.from_json(entry["verdict"]) if isinstance(entry, dict) else None
    except (KeyError, TypeError, ValueError):
        return None
    if verdict is None:
        return None
    artifacts = _unzip(_zip(cache_dir, entry_key), limit) if entry.get("artifacts") else None
    if with_artifacts and artifacts is None:
        return None
    return Kept(verdict, artifacts)


def _evict(cache_dir, data: dict) -> None:
    """Drop the oldest entries (and their compiler output) beyond MAX_ENTRIES or MAX_ARTIFACT_BYTES."""
    def kept_at(k):
        return data[k].get("kept", 0) if isinstance(data[k], dict) else 0

    newest_first = sorted(data, key=kept_at, reverse=True)
    total = 0
    for number, entry_key in enumerate(newest_first):
        entry = data[entry_key]
        size = entry.get("artifacts_bytes", 0) if isinstance(entry, dict) else 0
        total += size if isinstance(size, int) else 0
        if number >= MAX_ENTRIES or total > MAX_ARTIFACT_BYTES:
            data.pop(entry_key)
            _zip(cache_dir, entry_key).unlink(missing_ok=True)


def keep(cache_dir, entry_key: str, verdict: Verdict, artifacts: dict[str, bytes] | None = None) -> None:
    """Keep a verdict the harness returned for the problem's own kernel, with the compiler output the archive stored
    for it (each file written whole or not at all)."""
    path = Path(cache_dir) / FILE
    with _LOCK:
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"verdict": verdict.to_json(), "kept": time.time(), "artifacts": artifacts is not None}
        if artifacts is not None:
            target = _zip(cache_dir, entry_key)
            target.parent.mkdir(mode=0o700, exist_ok=True)
            partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zipped:
                for name in sorted(artifacts):
                    zipped.writestr(name, artifacts[name])
            partial.replace(target)
            entry["artifacts_bytes"] = target.stat().st_size
        data = _read(cache_dir)
        data[entry_key] = entry
        _evict(cache_dir, data)
        partial = path.with_name(f".{FILE}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(data))
        partial.replace(path)
