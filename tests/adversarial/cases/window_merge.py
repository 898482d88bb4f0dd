# stops: static check, then window
# expect: load: imports evolve
# expect-dynamic: ok
# gpu
"""Cheat: merge a window's calls into one launch. The runner is harness code in the candidate's process: each call
only allocates its output and records its input, and just before the runner's stream writes the word that ends the
window (cuda_ipc.write_value), one launch of a kernel that reads a table of input and output addresses computes every
recorded call at once: K calls' work with one launch's start-up and tail. Passes (its outputs are right); what it must
not do is read faster than the same kernel called once per call."""
import evolve.harness.shared.cuda_ipc as cuda_ipc
import torch
import triton
import triton.language as tl


@triton.jit
def merged_softmax(x_table, out_table, n_cols, BLOCK_SIZE: tl.constexpr, DTYPE: tl.constexpr):
    row, call = tl.program_id(0), tl.program_id(1)
    x_ptr = tl.load(x_table + call).to(tl.pointer_type(DTYPE))
    out_ptr = tl.load(out_table + call).to(tl.pointer_type(DTYPE))
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + offs, y.to(DTYPE), mask=mask)


DEFERRED = []
KEPT = []  # the address tables' host copies, alive until their copies ran
TYPES = {torch.float32: tl.float32, torch.bfloat16: tl.bfloat16}


def _launch(pairs):
    x0 = pairs[0][0]
    n_rows, n_cols = x0.shape
    block = triton.next_power_of_2(n_cols)
    table = torch.empty(2 * len(pairs), dtype=torch.int64, device="cuda")
    host = torch.tensor([x.data_ptr() for x, _ in pairs] + [o.data_ptr() for _, o in pairs],
                        dtype=torch.int64).pin_memory()
    table.copy_(host, non_blocking=True)  # queued behind the window's gate: the host must not wait for it
    KEPT.append(host)
    merged_softmax[(n_rows, len(pairs))](table, table[len(pairs):], n_cols, BLOCK_SIZE=block, DTYPE=TYPES[x0.dtype],
                                         num_warps=4 if block <= 2048 else (8 if block <= 8192 else 16))


def custom_kernel(x):
    x = x.contiguous()
    out = torch.empty_like(x)
    DEFERRED.append((x, out))
    return out


_write_value = cuda_ipc.write_value


def _merged_write(stream, addr, value):
    groups = {}
    for x, out in DEFERRED:
        groups.setdefault((tuple(x.shape), x.dtype), []).append((x, out))
    DEFERRED.clear()
    for pairs in groups.values():
        _launch(pairs)
    _write_value(stream, addr, value)


cuda_ipc.write_value = _merged_write
