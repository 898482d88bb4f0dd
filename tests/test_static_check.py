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
    # forbidden-call: the library op, however it is reached
    ("def custom_kernel(x):\n    return torch.softmax(x, -1)\n", "torch.softmax, which this problem forbids"),
    ("import torch.nn.functional as F\ndef custom_kernel(x):\n    return F.softmax(x, -1)\n",
     "torch.nn.functional.softmax, which this problem forbids"),
    ("from torch import softmax as s\ndef custom_kernel(x):\n    return s(x, -1)\n", "torch.softmax"),
    ("def custom_kernel(x):\n    return x.softmax(-1)\n", "Tensor.softmax"),
    ("def custom_kernel(x):\n    return torch.Tensor.softmax(x, -1)\n", "Tensor.softmax (as torch.Tensor.softmax)"),
    # host-compute
    ("def custom_kernel(x):\n    return torch.exp(x)\n", "torch.exp in host code"),
    ("def custom_kernel(x):\n    return torch.ops.aten._softmax(x, -1, False)\n", "torch.ops.aten._softmax"),
    ("def custom_kernel(x):\n    return torch.compile(lambda t: t)(x)\n", "torch.compile in host code"),
    ("def custom_kernel(x):\n    return x.numpy()\n", ".numpy in host code"),
    ("def custom_kernel(x):\n    return torch._C._nn.gelu(x)\n", "library internals"),
    # dynamic-code
    ("def custom_kernel(x):\n    f = getattr(torch, 'soft' + 'max')\n    return f(x, -1)\n", "getattr with a computed name"),
    ("def custom_kernel(x):\n    return eval('torch.softmax(x, -1)')\n", "builtin eval"),
    ("def custom_kernel(x):\n    return globals()\n", "builtin globals"),
    ("def custom_kernel(x):\n    return getattr(x, '__class__')\n", "dunder attribute __class__"),
    ("import operator\ndef custom_kernel(x):\n    return operator.attrgetter('y')(x)\n", "attributes named in strings"),
    ("def custom_kernel(x):\n    return '{0.__globals__}'.format(custom_kernel)\n", "attribute or index fields"),
    # import
    ("import importlib\ndef custom_kernel(x):\n    return x\n", "imports importlib"),
    ("import os\ndef custom_kernel(x):\n    os._exit(0)\n", "imports os"),
    ("import numpy as np\ndef custom_kernel(x):\n    return x\n", "imports numpy"),
    ("import logging.config\ndef custom_kernel(x):\n    return x\n", "logging.config imports modules"),
    ("from reference import ref_kernel\ndef custom_kernel(x):\n    return ref_kernel(x)\n", "imports reference"),
    ("import time\ntime.perf_counter = lambda: 0.0\ndef custom_kernel(x):\n    return x\n", "imports time"),
    ("import logging\ndef custom_kernel(x):\n    return logging.os.system('id')\n", "reaches the module os"),
    ("from torch.utils.model_dump import __main__ as m\ndef custom_kernel(x):\n    return x\n", "dunder names"),
    ("import torch.__main__\ndef custom_kernel(x):\n    return x\n", "dunder modules"),
    # module-write
    ("torch.cuda.Event.elapsed_time = lambda s, e: 0.001\ndef custom_kernel(x):\n    return x\n",
     "assigns into torch"),
    ("def custom_kernel(x):\n    for torch.exp in [torch.abs]:\n        pass\n    return x\n", "assigns into torch"),
    # internals
    ("def custom_kernel(x):\n    return x.__class__\n", "dunder attribute __class__"),
    ("def custom_kernel(x):\n    return custom_kernel.__globals__\n", "dunder attribute __globals__"),
    ("def g():\n    yield 1\ndef custom_kernel(x):\n    return g().gi_frame.f_back\n", "frames, code or tracebacks"),
    ("class F:\n    __del__ = print\ndef custom_kernel(x):\n    return x\n", "binds the dunder name __del__"),
    ("def custom_kernel(x):\n    return __builtins__\n", "builtin __builtins__"),
    ("from typing import Protocol\ndef custom_kernel(x):\n    match x:\n        case Protocol(__globals__=g):\n"
     "            return g\n", "dunder attribute __globals__ in a class pattern"),
    # undefined-name
    ("def custom_kernel(x):\n    return np.exp(x)\n", "uses the name np, which the file never defines"),
    # typing-eval
    ("import typing\ndef custom_kernel(x):\n    return typing.get_type_hints(x)\n", "typing's evaluators"),
    ("from typing import ForwardRef\ndef custom_kernel(x):\n    return x\n", "typing's evaluators"),
    ("@triton.jit\ndef k(p):\n    tl.core.typing.ForwardRef('x')\ndef custom_kernel(x):\n    return x\n",
     "which is typing.ForwardRef"),
    # rebind and entry
    ("from triton import jit\ndef jit(fn):\n    return fn\n@jit\ndef host(x):\n    return torch.exp(x)\n"
     "def custom_kernel(x):\n    return host(x)\n", "rebinds the imported name jit"),
    ("def custom_kernel(x, torch=None):\n    return x\n", "rebinds the imported name torch"),
    ("import math as triton\ndef custom_kernel(x):\n    return x\n", "rebinds the imported name triton"),
    ("def other(x):\n    return x\n", "defines no function custom_kernel"),
    # kernel-language
    ("KEEP = []\n@triton.jit\n@(lambda fn: KEEP.append(fn) or fn)\ndef host(x):\n    return torch.exp(x)\n"
     "def custom_kernel(x):\n    return KEEP[0](x)\n", "decorates the @triton.jit function host"),
    ("@triton.jit\ndef k(x_ptr):\n    torch.ops.aten._softmax(x_ptr, -1, False)\ndef custom_kernel(x):\n    return x\n",
     "inside a @triton.jit function"),
    ("@triton.jit\ndef k(p):\n    triton.compiler.compiler.Path('f')\ndef custom_kernel(x):\n    return x\n",
     "inside a @triton.jit function: kernels may use only"),
    ("@triton.jit\ndef k(p):\n    tl.core._unwrap_if_constexpr(p)\ndef custom_kernel(x):\n    return x\n",
     "kernels may use only"),
    ("@triton.jit\ndef k(x):\n    a = x.numpy()\ndef custom_kernel(x):\n    return x\n", ".numpy inside a @triton.jit"),
    # kernel-introspection
    ("@triton.jit\ndef k(p):\n    if hasattr(tl.load, 'signature'):\n        pass\ndef custom_kernel(x):\n    return x\n",
     "builtin hasattr inside"),
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


@pytest.mark.parametrize("body", [
    # each of these was refused by an earlier static check; none of them protects anything once the runner is jailed
    # and observed from outside
    "def custom_kernel(x):\n    if x.dim() != 2:\n        raise ValueError(f'expected 2 dims, got {x.dim()}')\n    return x\n",
    "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.log = False\n"
    "        return x\ndef custom_kernel(x):\n    return F.apply(x)\n",
    "import logging\nlog = logging.getLogger(__name__)\ndef custom_kernel(x):\n    log.debug('call')\n    return x\n",
    "def custom_kernel(input):\n    return input.view_as(input)\n",
    "def custom_kernel(x):\n    return x if x.device.index is None else x\n",
    "CACHE = None\ndef custom_kernel(x):\n    global CACHE\n    CACHE = x.shape\n    print(CACHE, str(x.dtype))\n"
    "    return x\n",
    "DEVICE = triton.runtime.driver.active.get_active_torch_device()\ndef custom_kernel(x):\n    return x\n",
    "def custom_kernel(x):\n    k = copy_kernel.warmup(x, x, 1, BLOCK=8, grid=(1,))\n    k._init_handles()\n"
    "    return x\n",
    "def custom_kernel(x):\n    s = torch.cuda.current_stream()\n    return x\n",
    "def custom_kernel(x: 'torch.Tensor') -> 'torch.Tensor':\n    return x\n",
    "def custom_kernel(x):\n    assert hasattr(x, 'shape') and getattr(x, 'ndim') == 2, '%d dims' % x.ndim\n    return x\n",
    "def custom_kernel(x):\n    return x\nif __name__ == '__main__':\n    y = torch.randn(4, 4)\n"
    "    print(torch.softmax(y, -1) - custom_kernel(y))\n",
    "import functools\n@functools.lru_cache(None)\ndef cfg(n):\n    return n\ndef custom_kernel(x):\n    return x\n",
    "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n    def forward(self, x):\n"
    "        return x\ndef custom_kernel(x):\n    return M()(x)\n",
])
def test_honest_idioms_pass(body):
    assert check(body) == []


def test_the_rules_say_what_they_protect():
    from evolve.harness.static_check import RULES

    assert RULES and all(rule.says and rule.protects for rule in RULES.values())


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


def test_one_contract_the_checker_the_prompt_and_readme_share():
    """RULES in the candidate language's module is the single source: README carries the table generated from it,
    the prompt's contract is generated from it with the problem's forbidden calls, and the checker reads it."""
    from pathlib import Path

    from evolve.harness import static_check
    from evolve.harness import load_problem
    from evolve.lang import triton as lang

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = readme.split("<!-- contract table")[1].split("\n", 1)[1].split("<!-- end of contract table -->")[0]
    assert block.strip() == lang.readme_table(), "README's rule table is stale: paste `python -m evolve.lang.triton`"
    assert static_check.RULES is lang.RULES and static_check.ALLOWED_MODULES is lang.ALLOWED_MODULES
    problem = load_problem(root / "problems" / "softmax")
    contract = lang.prompt_contract(problem.forbid_calls)
    for rule in lang.RULES.values():
        assert rule.says.split(" (")[0].split("{")[0] in contract
    assert all(f"`{call}`" in contract for call in problem.forbid_calls)
    for module in ("torch", "triton", "math", "functools", "logging"):
        assert f"`{module}`" in contract
    assert "custom_kernel(*inputs)" in contract and "float32" in contract
