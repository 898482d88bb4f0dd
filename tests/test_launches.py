"""The runner's launch log, in each of its modes. It is a first line (no verdict rests on what it counts), run in a
fresh process per mode: installing it patches Triton for the rest of the process, as in a runner."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

KERNEL = textwrap.dedent('''
    import json, sys, torch
    sys.path.insert(0, sys.argv[1])
    from evolve.lang.triton.launches import LaunchLog
    log = LaunchLog()
    log.install(sys.argv[2])
    import triton
    import triton.language as tl

    @triton.jit
    def double_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
''')


def run(mode: str, body: str, tmp_path) -> dict:
    """The script in a real file (Triton reads a kernel's source from its file), in a process of its own."""
    import os

    env = {"TRITON_INTERPRET": "1"} if mode == "interpret" else {}
    script = tmp_path / f"{mode}.py"
    script.write_text(KERNEL + textwrap.dedent(body))
    out = subprocess.run([sys.executable, str(script), str(ROOT), mode], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton"), **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_interpreter_counts_launches_and_keeps_the_kernels_module_clean(tmp_path):
    seen = run("interpret", '''
        import numpy
        x = torch.arange(10, dtype=torch.float32)
        out = torch.empty_like(x)
        double_kernel[(1,)](out, x, 10, BLOCK=16)
        double_kernel[(1,)](out, x, 10, BLOCK=16)
        try:
            double_kernel(out, x, 10, BLOCK=16)
            direct = "ran"
        except RuntimeError as exc:
            direct = str(exc)
        leaked = sorted(k for k, v in globals().items() if v is numpy)
        print(json.dumps({"launches": log.launches, "ok": bool((out == 2 * x).all()), "direct": direct,
                          "leaked": leaked}))
    ''', tmp_path)
    assert seen["launches"] == 2 and seen["ok"]
    assert "called directly from host code" in seen["direct"]
    assert seen["leaked"] == ["numpy"], seen  # only this test's own import: the interpreter added no np


def test_without_a_gpu_launches_compile_for_hopper_and_the_driver_answers(tmp_path):
    seen = run("compile", '''
        x = torch.empty(1000)
        double_kernel[(8,)](torch.empty_like(x), x, 1000, BLOCK=128)
        kernel = next(iter(log.kernels.values()))
        props = triton.runtime.driver.active.utils.get_device_properties(0)
        print(json.dumps({"launches": log.launches, "kernels": len(log.kernels), "ptx": "sm_90" in kernel.asm["ptx"],
                          "sms": props["multiprocessor_count"],
                          "device": str(triton.runtime.driver.active.get_active_torch_device())}))
    ''', tmp_path)
    assert seen == {"launches": 1, "kernels": 1, "ptx": True, "sms": 132, "device": "cpu"}


@pytest.mark.gpu
def test_on_a_gpu_every_real_launch_is_counted_once_compiled_kernels_too(tmp_path):
    seen = run("gpu", '''
        x = torch.arange(10, dtype=torch.float32, device="cuda")
        out = torch.empty_like(x)
        double_kernel[(1,)](out, x, 10, BLOCK=16)
        compiled = double_kernel.warmup(out, x, 10, BLOCK=16, grid=(1,))
        compiled[(1, 1, 1)](out, x, 10, 16)
        torch.cuda.synchronize()
        print(json.dumps({"launches": log.launches, "ok": bool((out == 2 * x).all())}))
    ''', tmp_path)
    assert seen == {"launches": 2, "ok": True}
