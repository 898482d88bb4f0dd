# stops: static check, then measurer
# expect: load: typing.forwardref|private attribute
# expect-dynamic: run|correctness: not finite|> rtol
# expect-dynamic-gpu: compile|run|correctness: not finite|> rtol|raised
"""Cheat: inside a @triton.jit body, reach typing through the kernel language (tl.core.typing) and build a
ForwardRef whose evaluation is an exec with full builtins; Triton's code generator (and the interpreter) run it when
the kernel is launched at import. The payload looks for the harness's checks among the live objects to make them
pass; in the runner there are none to find (the checks run in the measurer), and the garbage output fails there
(or, where a Triton version's code generator refuses the payload, the launch raises)."""
import torch
import triton
import triton.language as tl


@triton.jit
def evil(p):
    tl.core.typing.ForwardRef(tl.constexpr(
        "(exec(\"import gc\\n"
        "for ctx in [o for o in gc.get_objects() if type(o).__name__=='Checks' and "
        "type(o).__module__=='evolve.harness.measurer.checks']:\\n"
        "    def cc(caller, case, seeds, device):\\n"
        "        return [{'max_abs':0.0,'max_rel':0.0,'mse':0.0,'rmse':0.0,'psnr':float('inf'),'cosine':1.0,"
        "'frac_off':0.0,'n_off':0,'worst_index':[],'reason':None,'dtype':'float32'} for _ in seeds]\\n"
        "    ctx.correctness=cc\\n"
        "    ctx.timed=lambda case, outs, sets_inputs: None\\n\"), int)[1]").value)._evaluate(None, None, "")
    tl.store(p, 0)


@triton.jit
def noop(p):
    tl.store(p, 0)


flag = torch.zeros(1, dtype=torch.int32)
try:
    evil[(1,)](flag)  # the payload runs, then ForwardRef trips over the '' guard: ignore
except Exception:
    pass


def custom_kernel(x):
    out = torch.empty_like(x)
    noop[(1,)](flag)
    return out
