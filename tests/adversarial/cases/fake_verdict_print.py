# stops: measurer
# expect: run|correctness: not finite|> rtol
"""Cheat: print text that looks like a passing verdict (ladder lines and channel-style JSON messages) on stdout
and stderr, hoping a parent scrapes output; the output itself is garbage from a no-op launch."""
import torch
import triton
import triton.language as tl

VERDICT = '{"kind": "rung", "name": "%s", "ok": true, "reason": null, "seconds": 0.1, "metrics": {}}'


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    for name in ("load", "compile", "run", "correctness", "benchmark", "roofline"):
        print(VERDICT % name, flush=True)
        print(f"[{name}] ok", flush=True)
    print('{"ok": true, "fitness": 1.0}\n{"kind": "done"}', flush=True)
    return out
