"""NVIDIA's binary tools on a compiled kernel (a cubin, whatever language built it): where cuobjdump is, and the SASS
of a stored cubin, read in a jail."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

_RESOURCE = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
_ARCH = re.compile(r"\.(sm_\w+)\.cubin|code for (sm_\w+)")


def tool(name: str) -> str | None:
    """cuobjdump/nvdisasm: the copy Triton bundles first (found without importing Triton), then PATH."""
    spec = importlib.util.find_spec("triton")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(folder) / "backends" / "nvidia" / "bin" / name
        if bundled.exists():
            return str(bundled)
    return shutil.which(name)


def read_cubin(cubin: bytes, path: Path, sass: bool = False) -> dict:
    """What cuobjdump reads from a compiled kernel (written to path first): registers, local memory and static shared
    memory of its first function, its architecture, and with sass=True its SASS (about 0.3 s a kernel). Empty
    without cuobjdump. Called where the cubin was made (the runner), never on a verdict's figures."""
    cuobjdump = tool("cuobjdump")
    if not cuobjdump:
        return {}
    path.write_bytes(cubin)

    def run(*flags):
        return subprocess.run([cuobjdump, *flags, str(path)], capture_output=True, text=True, timeout=60).stdout

    read: dict = {}
    match = _RESOURCE.search(run("--dump-resource-usage"))
    if match:
        read.update(regs=int(match.group(2)), smem=int(match.group(4)), local_bytes=int(match.group(5)))
    arch = _ARCH.search(run("--list-elf"))
    read["arch"] = (arch.group(1) or arch.group(2)) if arch else None
    if sass:
        dumped = run("--dump-sass")
        read["sass"] = dumped[dumped.find("code for"):] if "code for" in dumped else dumped
    return read


def disassemble(cubin: bytes) -> str | None:
    """SASS of a stored cubin (cuobjdump --dump-sass), or None without cuobjdump. The cubin was written by a runner,
    so cuobjdump reads it jailed (harness/runner/jail.jailed), after the evaluation, outside any timing."""
    import tempfile

    from .jail import jailed

    cuobjdump = tool("cuobjdump")
    if not cuobjdump:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        dumped = subprocess.run(jailed([cuobjdump, "--dump-sass", str(path)], tmp), capture_output=True, text=True,
                                timeout=60).stdout
    return dumped[dumped.find("code for"):] if "code for" in dumped else dumped
