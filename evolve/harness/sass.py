"""NVIDIA's binary tools on a compiled kernel (a cubin, whatever language built it): where cuobjdump is, and the SASS
of a stored cubin, read in a jail."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path


def tool(name: str) -> str | None:
    """cuobjdump/nvdisasm: the copy Triton bundles first (found without importing Triton), then PATH."""
    spec = importlib.util.find_spec("triton")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(folder) / "backends" / "nvidia" / "bin" / name
        if bundled.exists():
            return str(bundled)
    return shutil.which(name)


def disassemble(cubin: bytes) -> str | None:
    """SASS of a stored cubin (cuobjdump --dump-sass), or None without cuobjdump. The cubin was written by a runner,
    so cuobjdump reads it jailed (harness/jail.jailed), after the evaluation, outside any timing."""
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
