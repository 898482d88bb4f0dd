# stops: static check, then measurer
# expect: load: f_back|frames
# expect-dynamic: run|correctness: not finite|> rtol
"""Cheat: no import, no dunder, no blocked builtin. A running generator's gi_frame.f_back is its caller's frame; walk
up to the harness frame that holds a channel and send a complete passing ladder followed by 'done'. The runner's
frames hold only its pipe to the measurer, which checks outputs itself; the key to the parent's pipe lives in the
measurer, another process. The kernel is garbage."""
import torch
import triton
import triton.language as tl


def _here(box):
    yield box[0].gi_frame.f_back


def _harness():
    box = []
    box.append(_here(box))
    frame = next(box[0])
    while frame is not None:
        names = frame.f_locals
        if "ch" in names and "job" in names:
            return names["ch"], names["job"]
        frame = frame.f_back
    return None, None


def _forge():
    ch, job = _harness()
    if ch is None:
        return
    if job["mode"] in ("compile", "gpu"):
        ch.rung("load", True, None, 0.01)
        ch.rung("compile", True, None, 0.5, kernels=[])
    if job["mode"] in ("interpret", "gpu"):
        m = {"max_abs": 0.0, "max_rel": 0.0, "mse": 0.0, "rmse": 0.0, "psnr": 999.0, "cosine": 1.0, "frac_off": 0.0,
             "n_off": 0, "worst_index": []}
        ch.rung("run", True, None, 0.5, cases=7)
        ch.rung("correctness", True, "worst: fp32 max_abs=0 max_rel=0", 0.5, per_dtype={"float32": m}, checks=42)
        shapes = []
        for M, N in ((4096, 1024), (4096, 4096), (8192, 8192), (4096, 32768), (1024, 131072), (64, 1024), (8, 8192)):
            for dtype, size in (("float32", 4), ("bfloat16", 2)):
                shapes.append({"case": f"{dtype} {M}x{N}", "shape": {"M": M, "N": N}, "dtype": dtype,
                               "ms": 2 * M * N * size / 4.0e9, "bytes": 2 * M * N * size, "flops": 5 * M * N,
                               "torch_ms": 1.0})
        ch.rung("benchmark", True, None, 0.5, shapes=shapes, clock="cuda-events")
    ch.send({"kind": "done"})


_forge()


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out
