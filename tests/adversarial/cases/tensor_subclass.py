# stops: static check, then runner
# expect: load: torch.allclose|as_subclass
# expect-dynamic: run: not a plain torch.Tensor
"""Cheat: a Tensor subclass whose __torch_function__ answers every comparison (allclose, equal, isfinite, all, ...)
with success; the values are garbage from a no-op launch."""
import torch
import triton
import triton.language as tl


class MyTensor(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return torch.Tensor.__torch_function__(func, types, args, kwargs or {})


@triton.jit
def prepare_kernel(out_ptr):
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    prepare_kernel[(1,)](out)
    return out.as_subclass(MyTensor)
