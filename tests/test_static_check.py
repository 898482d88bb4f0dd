"""The static half of the load rung."""
import pytest

from evolve.harness.static_check import Rejection, check_source

FORBID = ("torch.softmax", "torch.nn.functional.softmax", "Tensor.softmax")
HEADER = "import torch\nimport triton\nimport triton.language as tl\n"
KERNEL = '''
@triton.jit
def copy_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.exp(x - tl.max(x, axis=0)).to(tl.float32), mask=offs < n)
'''


def check(body: str):
    return check_source(HEADER + KERNEL + body, "cand.py", FORBID, ("reference",))


def test_honest_host_code_passes():
    body = '''
def custom_kernel(x):
    M, N = x.shape
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](out, x.contiguous(), x.numel(), BLOCK=1024, num_warps=4)
    return out.view(M, N)
'''
    assert check(body) == []


@pytest.mark.parametrize("body, fragment", [
    ("def custom_kernel(x):\n    return torch.softmax(x, -1)\n", "torch.softmax, which this problem forbids"),
    ("import torch.nn.functional as F\ndef custom_kernel(x):\n    return F.softmax(x, -1)\n",
     "torch.nn.functional.softmax, which this problem forbids"),
    ("from torch import softmax as s\ndef custom_kernel(x):\n    return s(x, -1)\n", "torch.softmax"),
    ("def custom_kernel(x):\n    return x.softmax(-1)\n", "Tensor.softmax"),
    ("def custom_kernel(x):\n    return torch.exp(x)\n", "torch.exp in host code"),
    ("def custom_kernel(x):\n    return x.float()\n", "Tensor.float in host code"),
    ("def custom_kernel(x):\n    f = getattr(torch, 'soft' + 'max')\n    return f(x, -1)\n", "builtin getattr"),
    ("def custom_kernel(x):\n    return eval('torch.softmax(x, -1)')\n", "builtin eval"),
    ("import importlib\ndef custom_kernel(x):\n    return x\n", "imports importlib"),
    ("import os\ndef custom_kernel(x):\n    os._exit(0)\n", "imports os"),
    ("from reference import ref_kernel\ndef custom_kernel(x):\n    return ref_kernel(x)\n", "imports reference"),
    ("import time\ntime.perf_counter = lambda: 0.0\ndef custom_kernel(x):\n    return x\n", "imports time"),
    ("torch.cuda.Event.elapsed_time = lambda s, e: 0.001\ndef custom_kernel(x):\n    return x\n",
     "assigns into torch"),
    ("def custom_kernel(x):\n    return x.__class__\n", "dunder attribute __class__"),
    ("CACHE = {}\ndef custom_kernel(x):\n    global CACHE\n    return x\n", "global statement"),
    ("def custom_kernel(x):\n    return torch.ops.aten._softmax(x, -1, False)\n", "torch.ops.aten._softmax"),
    ("def other(x):\n    return x\n", "defines no function custom_kernel"),
    # host code hidden where a visitor might not look: annotations, return annotations, defaults of jit functions
    ("def f(a: eval('1')):\n    return a\ndef custom_kernel(x):\n    return x\n", "builtin eval"),
    ("def f(a) -> torch.cuda.Stream():\n    return a\ndef custom_kernel(x):\n    return x\n",
     "torch.cuda.Stream in host code"),
    ("@triton.jit\ndef k(p, s=torch.cuda.Stream()):\n    pass\ndef custom_kernel(x):\n    return x\n",
     "torch.cuda.Stream in host code"),
    # Triton's launch internals and the autotuner's own timing
    ("def custom_kernel(x):\n    c = copy_kernel.warmup(x, x, 1, BLOCK=8, grid=(1,))\n    return x\n", "uses .warmup"),
    ("def custom_kernel(x):\n    c = copy_kernel[(1,)](x, x, 1, BLOCK=8)\n    c[(1, 1, 1)](x, x, 1, 8, stream=0)\n"
     "    return x\n", "passes stream="),
    ("@triton.autotune(configs=[triton.Config({})], key=[], use_cuda_graph=True)\n@triton.jit\ndef k(p):\n    pass\n"
     "def custom_kernel(x):\n    return x\n", "passes use_cuda_graph="),
    # attribute reads by name, past the attribute rules
    ("from typing import Protocol, runtime_checkable\n@runtime_checkable\nclass Any_(Protocol):\n    pass\n"
     "def custom_kernel(x):\n    match custom_kernel:\n        case Any_(__globals__=g):\n            return g\n",
     "class pattern in match"),
    ("def custom_kernel(x, b={}):\n    return b['__import__']\n", "the string '__import__'"),
    ("def custom_kernel(x):\n    return '{0.__globals__}'.format(custom_kernel)\n", "uses .format"),
    # a name that looks like an import but is not: host code dressed as a kernel
    ("from triton import jit\ndef jit(fn):\n    return fn\n@jit\ndef host(x):\n    return torch.exp(x)\n"
     "def custom_kernel(x):\n    return host(x)\n", "rebinds the imported name jit"),
    ("def custom_kernel(x):\n    for tl in (x,):\n        pass\n    return x\n", "rebinds the imported name tl"),
    ("def custom_kernel(x, torch=None):\n    return x\n", "rebinds the imported name torch"),
    ("import math as triton\ndef custom_kernel(x):\n    return x\n", "rebinds the imported name triton"),
    ("KEEP = []\n@triton.jit\n@(lambda fn: KEEP.append(fn) or fn)\ndef host(x):\n    return torch.exp(x)\n"
     "def custom_kernel(x):\n    return KEEP[0](x)\n", "decorates the @triton.jit function host"),
    ("@triton.jit\ndef k(x_ptr):\n    torch.ops.aten._softmax(x_ptr, -1, False)\ndef custom_kernel(x):\n    return x\n",
     "inside a @triton.jit function"),
    # typing evaluates strings: annotations as code, ForwardRef, get_type_hints
    ("class H:\n    sm: \"torch.softmax\"\ndef custom_kernel(x):\n    return x\n", "string annotation"),
    ("def f(a: 'torch.softmax'):\n    return a\ndef custom_kernel(x):\n    return x\n", "string annotation"),
    ("import typing\ndef custom_kernel(x):\n    return typing.get_type_hints(x)\n", "uses typing.get_type_hints"),
    ("from typing import ForwardRef\ndef custom_kernel(x):\n    return x\n", "imports typing.ForwardRef"),
    ("from typing import Optional\ndef custom_kernel(x, y: Optional[int] = None):\n    return y._evaluate\n",
     "private attribute _evaluate"),
    # runtime objects re-exported under triton.language: sys.modules, the driver, importlib machinery
    ("def custom_kernel(x):\n    return triton.language.extra.modules['os']\n", "triton.language.extra.modules"),
    ("def custom_kernel(x):\n    return tl.target_info.driver.active\n", "tl.target_info" if False else
     "triton.language.target_info.driver"),
    ("@triton.jit\ndef k(p):\n    m = tl.extra.modules\ndef custom_kernel(x):\n    return x\n", "reaches a builtins.dict"),
    ("def custom_kernel(x, d={}):\n    return d.system('id')\n", "uses .system"),
    # code Python or torch runs implicitly, after the op log has closed
    ("class L(list):\n    def __iter__(self):\n        yield 1\ndef custom_kernel(x):\n    return L()\n",
     "special method __iter__"),
    ("def custom_kernel(x):\n    print(x)\n    return x\n", "builtin print"),
    ("def custom_kernel(x):\n    s = f'{x}'\n    return x\n", "formats a value in an f-string"),
    ("def custom_kernel(x):\n    s = '%s' % x\n    return x\n", "%-formatting"),
    # a kernel body run as Python (the interpreter) must not hand tensors to numpy or the host
    ("@triton.jit\ndef k(x):\n    a = x.numpy()\ndef custom_kernel(x):\n    return x\n", ".numpy inside a @triton.jit"),
    ("def custom_kernel(x):\n    return id(x)\n", "builtin id"),
    # modules that run code when imported
    ("from torch.utils.model_dump import __main__ as m\ndef custom_kernel(x):\n    return x\n", "dunder names"),
    ("import torch.__main__\ndef custom_kernel(x):\n    return x\n", "dunder modules"),
    # code that runs when the harness drops an object: finalizers, generators' finally blocks, attributes on tensors
    ("class F:\n    __del__ = print\ndef custom_kernel(x):\n    return x\n", "special name __del__"),
    ("def g():\n    try:\n        yield 1\n    finally:\n        pass\ndef custom_kernel(x):\n    return x\n",
     "uses yield"),
    ("async def g():\n    return 1\ndef custom_kernel(x):\n    return x\n", "async"),
    ("def custom_kernel(x):\n    out = torch.empty_like(x)\n    out.tag = 1\n    return out\n",
     "sets an attribute on something other"),
    ("class C:\n    def f(self, t):\n        t.tag = 1\ndef custom_kernel(x):\n    return x\n",
     "sets an attribute on something other"),
    ("def custom_kernel(x):\n    copy_kernel[(1,)](x, x, 1, BLOCK=1, **{'stream': 0})\n    return x\n",
     "passes stream= through **"),
    # every kind of store is a store: loop, annotated, with-item and comprehension targets
    ("def custom_kernel(x):\n    for x.tag in [1]:\n        pass\n    return x\n", "sets an attribute"),
    ("def custom_kernel(x):\n    x.tag: int = 5\n    return x\n", "sets an attribute"),
    ("def custom_kernel(x):\n    return [0 for x.tag in [1]]\n", "sets an attribute"),
    ("def custom_kernel(x):\n    for torch.exp in [torch.abs]:\n        pass\n    return x\n", "assigns into torch"),
    ("class C:\n    def f(self, t):\n        self = t\n        self.tag = 1\ndef custom_kernel(x):\n    return x\n",
     "sets an attribute"),
    # kernels reach only the kernel language, however a name is spelt
    ("@triton.jit\ndef k(p):\n    tl.core.typing.ForwardRef('x')\ndef custom_kernel(x):\n    return x\n",
     "which is typing.ForwardRef"),
    ("@triton.jit\ndef k(p):\n    triton.compiler.compiler.Path('f')\ndef custom_kernel(x):\n    return x\n",
     "inside a @triton.jit function: kernels may use only"),
    ("@triton.jit\ndef k(p):\n    tl.core._unwrap_if_constexpr(p)\ndef custom_kernel(x):\n    return x\n",
     "kernels may use only"),
    # kernels that could tell the interpreter from the compiler and take another branch in each
    ("@triton.jit\ndef k(p):\n    if hasattr(tl.load, 'signature'):\n        pass\ndef custom_kernel(x):\n    return x\n",
     "builtin hasattr"),
    ("@triton.jit\ndef k(p):\n    a = p.handle\ndef custom_kernel(x):\n    return x\n", "uses .handle inside"),
    ("@triton.jit\ndef k(p):\n    if isinstance(p, int):\n        pass\ndef custom_kernel(x):\n    return x\n",
     "builtin isinstance inside"),
    ("@triton.jit\ndef k(p, F: tl.constexpr):\n    F(p)\ndef custom_kernel(x):\n    return x\n",
     "calls its parameter F"),
    ("@triton.jit\ndef k(p, X: tl.constexpr):\n    s = f'{X}'\ndef custom_kernel(x):\n    return x\n",
     "formats a value in an f-string"),
])
def test_rejections(body, fragment):
    problems = check(body)
    assert any(fragment in p for p in problems), problems


def test_a_method_may_set_attributes_on_its_own_instance():
    body = ("class Plan:\n    def __init__(self, block):\n        self.block = block\n"
            "    def grid(self, n):\n        self.rows = n\n        return (triton.cdiv(n, self.block),)\n"
            "def custom_kernel(x):\n    return x\n")
    assert check(body) == []


def test_module_dunders_and_closures_in_methods_pass():
    body = ("__all__ = ['custom_kernel']\n"
            "class Plan:\n    def __init__(self, block):\n        def setup():\n            self.block = block\n"
            "        setup()\n"
            "def custom_kernel(x):\n    return x\n")
    assert check(body) == []


def test_annotations_with_typing_names_pass():
    body = ("from typing import Optional, Tuple\n"
            "def custom_kernel(x: torch.Tensor, scale: Optional[float] = None) -> Tuple[torch.Tensor]:\n"
            "    return (x,)\n")
    assert check(body) == []


def test_jit_code_may_use_triton_freely():
    assert check("def custom_kernel(x):\n    return x\n") == []


def test_syntax_error_raises_with_line():
    with pytest.raises(Rejection, match="SyntaxError at line 2"):
        check_source("def custom_kernel(x):\n    return (\n", "cand.py")


def test_the_check_imports_nothing_the_candidate_names():
    """It runs in the parent before any child: naming a module must not import (and so run) it."""
    import sys

    names = ["this", "torch.utils.model_dump", "torch.utils.model_dump.__main__", "unittest.__main__"]
    before = {n for n in names if n in sys.modules}
    body = ("import this\nfrom torch.utils.model_dump import __main__ as md\nfrom unittest import __main__ as um\n"
            "import torch.utils.model_dump\n"
            "def custom_kernel(x):\n    return (this, md, um, torch.utils.model_dump.main(x))\n")
    problems = check(body)
    assert problems and {n for n in names if n in sys.modules} == before, problems


def test_the_seed_passes_under_the_interpreter_too():
    """Under TRITON_INTERPRET=1 the language's functions are interpreter wrappers; they are still the language."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("from evolve.harness.static_check import screen; import sys; "
            "problems = screen(sys.argv[1]); print(problems); sys.exit(1 if problems else 0)")
    for seed in sorted((root / "problems" / "softmax" / "seeds").glob("*.py")):
        result = subprocess.run([sys.executable, "-c", code, str(seed)], capture_output=True, text=True, cwd=root,
                                env={**__import__("os").environ, "TRITON_INTERPRET": "1"}, timeout=300)
        assert result.returncode == 0, (seed.name, result.stdout, result.stderr[-2000:])
