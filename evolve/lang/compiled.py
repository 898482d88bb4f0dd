"""What the runner sides of languages compiled to a cubin share (lang/cutedsl, lang/tilelang): the compile rung's
description of each kept kernel, read from its cubin, and `--dump`'s files. Like the runner sides, this runs beside
candidate code and no verdict depends on it."""
from __future__ import annotations

from pathlib import Path

from ..harness.runner.sass import read_cubin


def describe_kernels(kernels: dict, artifacts, work: Path, sass: bool) -> list[dict]:
    """One description per kernel ("name/id" -> kernel): registers, shared memory, spills, arch and (when asked)
    SASS from the cubin artifacts(kernel) holds, where it holds one."""
    infos = []
    for index, (key, kernel) in enumerate(kernels.items()):
        name = key.split("/", 1)[0]
        info = {"name": name, "num_warps": None, "num_stages": None, "smem": None, "regs": None,
                "spills": None, "arch": None, "local_bytes": None}
        cubin = artifacts(kernel).get("cubin")
        if isinstance(cubin, bytes) and cubin:
            read = read_cubin(cubin, work / f"{index:02d}_{name[:80]}.cubin", sass)
            info.update({k: read[k] for k in ("regs", "smem", "local_bytes") if k in read})
            info["spills"] = read.get("local_bytes")
            info["arch"] = read.get("arch")
            if "sass" in read:
                info["_sass"] = read["sass"]
        infos.append(info)
    return infos


def dump_kernel(info: dict, folder: Path, index: int, contents: dict) -> list[str]:
    """The index-th kernel's files under folder ({extension: text or bytes}, and its SASS where read); their names."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{index:02d}_{info['name'][:80]}"
    with open(folder / "index.txt", "a") as index_file:
        index_file.write(f"{stem}  {info.get('arch') or '?'}\n")
    written = []
    for kind, content in contents.items():
        path = folder / f"{stem}.{kind}"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
        written.append(path.name)
    if info.get("_sass"):
        (folder / f"{stem}.sass").write_text(info["_sass"])
        written.append(f"{stem}.sass")
    return written
