"""The static half of the load rung."""
import pytest

from evolve.harness.runner.static.check import Rejection, check_source

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
    ("def custom_kernel(x):\n    f = getattr(torch, 'soft' + 'max')\n    return f(x, -1)\n",
     "getattr with a computed name"),
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
    ("@triton.jit\ndef k(p):\n    if hasattr(tl.load, 'signature'):\n        pass\n"
     "def custom_kernel(x):\n    return x\n", "builtin hasattr inside"),
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
    "def custom_kernel(x):\n    if x.dim() != 2:\n        raise ValueError(f'expected 2 dims, got {x.dim()}')\n"
    "    return x\n",
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
    "def custom_kernel(x):\n    assert hasattr(x, 'shape') and getattr(x, 'ndim') == 2, '%d dims' % x.ndim\n"
    "    return x\n",
    "def custom_kernel(x):\n    return x\nif __name__ == '__main__':\n    y = torch.randn(4, 4)\n"
    "    print(torch.softmax(y, -1) - custom_kernel(y))\n",
    "import functools\n@functools.lru_cache(None)\ndef cfg(n):\n    return n\ndef custom_kernel(x):\n    return x\n",
    "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n    def forward(self, x):\n"
    "        return x\ndef custom_kernel(x):\n    return M()(x)\n",
])
def test_honest_idioms_pass(body):
    assert check(body) == []


def test_the_rules_say_what_they_protect():
    from evolve import lang

    rules = lang.get("triton").rules.rules
    assert rules and all(rule.says and rule.protects for rule in rules.values())


def test_jit_code_may_use_triton_freely():
    assert check("def custom_kernel(x):\n    return x\n") == []


def test_syntax_error_raises_with_line():
    with pytest.raises(Rejection, match="SyntaxError at line 2"):
        check_source("def custom_kernel(x):\n    return (\n", "cand.py")


def test_the_check_imports_no_module_outside_the_allowed_packages_nor_a_dunder_module():
    """Resolving a name imports a submodule of an allowed package, never a module outside them or a dunder module
    (`__main__` runs a program)."""
    import sys

    names = ["this", "torch.utils.model_dump.__main__", "unittest.__main__"]
    before = {n for n in names if n in sys.modules}
    body = ("import this\nfrom torch.utils.model_dump import __main__ as md\nfrom unittest import __main__ as um\n"
            "def custom_kernel(x):\n    return (this, md, um)\n")
    problems = check(body)
    assert len(problems) >= 3 and {n for n in names if n in sys.modules} == before, problems


ESCAPES = {  # paths through Triton modules that `import triton` does not load, each reaching a module it imports
    "dotted": "import triton.tools.build_extern\nOUT = triton.tools.build_extern.subprocess.check_output\n",
    "from": "from triton.tools.build_extern import subprocess\nOUT = subprocess.check_output\n",
    "alias": "import triton.tools.build_extern as b\nOUT = b.subprocess.check_output\n",
}


@pytest.mark.parametrize("how", sorted(ESCAPES))
def test_a_path_through_a_module_the_process_never_loaded_is_judged_by_what_it_names(tmp_path, how):
    """The check once walked only modules already loaded in the parent, and a path through any other submodule was
    passed as unknown: `triton.tools.build_extern.subprocess` reached subprocess. It is judged in a checker process
    that imports what the path names, whatever the parent loaded, and the parent imports nothing of it."""
    import sys

    from evolve.harness.parent.check_file import check_file

    path = tmp_path / "cand.py"
    path.write_text(HEADER + KERNEL + ESCAPES[how] + "def custom_kernel(x):\n    return x\n")
    loaded = "triton.tools.build_extern" in sys.modules
    problems = check_file(path, FORBID)
    assert any("reaches the module subprocess" in p for p in problems), problems
    assert ("triton.tools.build_extern" in sys.modules) == loaded


def test_a_name_no_module_holds_is_refused_not_guessed():
    problems = check("import triton.no_such_module\nX = triton.language.no_such_name\n"
                     "def custom_kernel(x):\n    return x\n")
    assert any("imports triton.no_such_module, which the check cannot load" in p for p in problems), problems
    assert any("triton.language.no_such_name, which names nothing the check can see" in p for p in problems)


def test_an_evaluation_refuses_such_a_file_at_load(tmp_path):
    from evolve.harness import EvalOptions, evaluate

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    seed = (root / "problems" / "softmax" / "seeds" / "softmax_rows.py").read_text()
    path = tmp_path / "cand.py"
    path.write_text("import triton.tools.build_extern as b\n" + seed + "\nWHO = b.subprocess.check_output(['id'])\n")
    verdict = evaluate(path, root / "problems" / "softmax", EvalOptions(cache_dir=str(tmp_path / "cache")))
    load = verdict.rungs[0]
    assert load.name == "load" and load.status == "failed" and "reaches the module subprocess" in load.reason, load


def test_the_seed_passes_under_the_interpreter_too():
    """Under TRITON_INTERPRET=1 the language's functions are interpreter wrappers; they are still the language."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = ("from evolve.harness.runner.static.check import screen; import sys; "
            "problems = screen(sys.argv[1]); print(problems); sys.exit(1 if problems else 0)")
    for seed in sorted((root / "problems" / "softmax" / "seeds").glob("*.py")):
        result = subprocess.run([sys.executable, "-c", code, str(seed)], capture_output=True, text=True, cwd=root,
                                env={**__import__("os").environ, "TRITON_INTERPRET": "1"}, timeout=300)
        assert result.returncode == 0, (seed.name, result.stdout, result.stderr[-2000:])


def test_one_contract_the_checker_the_prompt_and_the_docs_share():
    """RULES in the candidate language's rules module is the single source: docs/languages.md carries the table
    generated from it, the prompt's contract is generated from it with the problem's forbidden calls, and the checker
    reads it through the language interface (evolve/lang)."""
    from pathlib import Path

    from evolve import lang as languages
    from evolve.harness import load_problem
    from evolve.lang.triton import rules as lang

    root = Path(__file__).resolve().parents[1]
    triton = languages.get("triton")
    assert triton.rules.rules is lang.RULES and triton.rules.allowed_modules is lang.ALLOWED_MODULES
    assert triton.prompt_contract is lang.prompt_contract and triton.rule_table is lang.rule_table
    problem = load_problem(root / "problems" / "softmax")
    contract = lang.prompt_contract(problem.forbid_calls)
    for rule in lang.RULES.values():
        assert rule.says.split(" (")[0].split("{")[0] in contract
    assert all(f"`{call}`" in contract for call in problem.forbid_calls)
    for module in ("torch", "triton", "math", "functools", "logging"):
        assert f"`{module}`" in contract
    assert "custom_kernel(*inputs)" in contract and "float32" in contract


# A library object kept in a name, a container, an attribute or a function's result is judged as the library path it
# may be, however it was bound; a module is followed only where the check can see every use of it.
GELU = "torch.nn.functional.gelu in host code"
TENSOR_INTERNALS = "torch.Tensor._make_subclass in host code: library internals"


@pytest.mark.parametrize("body, fragment", [
    # plain, unpacking, augmented, walrus, for, with, defaults, returns, global, nonlocal, lambda, containers
    ("def custom_kernel(x):\n    m = torch.nn\n    return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    a, (b, m) = 1, (2, torch.nn)\n    return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    first, *rest = [1, torch.nn]\n    return rest[0].functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    ms = []\n    ms += [torch.nn]\n    return ms[0].functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    if (m := torch.nn) is not None:\n        return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    for m in (torch.nn,):\n        return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    return [m.functional.gelu(x) for m in [torch.nn]][0]\n", GELU),
    ("import contextlib\ndef custom_kernel(x):\n    with contextlib.nullcontext(torch.Tensor) as T:\n"
     "        return T._make_subclass(T, x)\n", TENSOR_INTERNALS),
    ("def custom_kernel(x, m=torch.nn):\n    return m.functional.gelu(x)\n", GELU),
    ("def library():\n    return torch.nn\ndef custom_kernel(x):\n    return library().functional.gelu(x)\n", GELU),
    ("def modules():\n    yield torch.nn\ndef custom_kernel(x):\n    for m in modules():\n"
     "        return m.functional.gelu(x)\n", GELU),
    ("M = None\ndef setup():\n    global M\n    M = torch.nn\ndef custom_kernel(x):\n    setup()\n"
     "    return M.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    m = None\n    def setup():\n        nonlocal m\n        m = torch.nn\n    setup()\n"
     "    return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    f = lambda: torch.nn\n    return f().functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    for m in (lambda: (yield torch.nn))():\n        return m.functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    f = lambda m=torch.nn: m.functional.gelu(x)\n    return f()\n", GELU),
    ("def custom_kernel(x):\n    return [torch.linalg, torch.nn][1].functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    d = {'m': torch.nn}\n    return d['m'].functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    d = {}\n    d['m'] = torch.nn\n    return d.get('m').functional.gelu(x)\n", GELU),
    ("def custom_kernel(x):\n    m = torch.nn\n    return getattr(m, 'functional').gelu(x)\n", GELU),
    # what the chain reaches: another library's call, an import, internals, the op log's switch
    ("def custom_kernel(x):\n    m = torch.serialization.torch\n    return m.mm(x, x)\n", "torch.mm in host code"),
    ("def custom_kernel(x):\n    m = torch.serialization\n    m.os.getpid()\n    return x\n", "reaches the module os"),
    ("def custom_kernel(x):\n    return tl.extra.modules['os'].getpid()\n", "through a table of modules"),
    ("def custom_kernel(x):\n    table = triton.language.extra\n    return table.modules.get('os')\n",
     "through a table of modules"),
    ("def custom_kernel(x):\n    m = torch.nn\n    return m.functional.torch._C._nn.gelu(x)\n", "library internals"),
    ("def custom_kernel(x):\n    m = torch.nn\n"
     "    with m.functional.torch.utils._python_dispatch._disable_current_modes():\n"
     "        return x\n", "_disable_current_modes in host code: library internals"),
    ("def custom_kernel(x):\n    T = torch.Tensor\n    return T._make_subclass(T, x)\n", TENSOR_INTERNALS),
    ("def use(t, x):\n    return t._make_subclass(t, x)\ndef custom_kernel(x):\n    return use(torch.Tensor, x)\n",
     TENSOR_INTERNALS),
    ("class C:\n    pass\nc = C()\nc.t = torch.Tensor\ndef custom_kernel(x):\n    return c.t._make_subclass(c.t, x)\n",
     TENSOR_INTERNALS),
    ("class M(torch.nn.Module):\n    pass\ndef custom_kernel(x):\n    return M._apply\n",
     "torch.nn.Module._apply in host code: library internals"),
    ("dt = torch.float32\n@triton.jit\ndef k(p):\n    tl.store(p, dt)\ndef custom_kernel(x):\n    return x\n",
     "torch.float32 inside a @triton.jit function"),
    # private names on what the library made or the caller handed in
    ("def custom_kernel(x):\n    return torch.empty_like(x)._base\n",
     "private name _base on an object torch.empty_like made"),
    ("def custom_kernel(x):\n    return x._typed_storage()\n",
     "private name _typed_storage on a value the check cannot"),
    # writes into library objects through a name
    ("def custom_kernel(x):\n    d = triton.runtime.driver\n    d.active = None\n    return x\n",
     "assigns into triton.runtime.driver"),
    ("def custom_kernel(x):\n    T = torch.Tensor\n    T.view = T.reshape\n    return x\n",
     "assigns into torch.Tensor"),
    # a module where the check could not follow it: refused where it goes
    ("import functools\ndef custom_kernel(x):\n"
     "    return functools.reduce(lambda a, b: b, [torch.nn]).functional.gelu(x)\n",
     "hands the module torch.nn to a call"),
    ("def use(m, x):\n    return m.functional.gelu(x)\ndef custom_kernel(x):\n    return use(torch.nn, x)\n",
     "hands the module torch.nn to a call"),
    ("def custom_kernel(x):\n    f = lambda: torch.nn\n"
     "    return list(map(lambda g: g(), [f]))[0].functional.gelu(x)\n",
     "hands the module torch.nn to a call"),
    ("class C:\n    pass\nc = C()\nc.m = torch.nn\ndef custom_kernel(x):\n    return c.m.functional.gelu(x)\n",
     "hands the module torch.nn to an attribute"),
    ("import enum\nclass E(enum.Enum):\n    M = torch.nn\n"
     "def custom_kernel(x):\n    return E.M.value.functional.gelu(x)\n",
     "hands the module torch.nn to a class body"),
    ("class C:\n    @property\n    def m(self):\n        return torch.nn\n"
     "def custom_kernel(x):\n    return C().m.functional\n",
     "hands the module torch.nn to the caller of a method"),
    ("def custom_kernel(x):\n    return torch.nn\n", "hands the module torch.nn to the runner"),
    ("def custom_kernel(x):\n    match torch.nn:\n        case m:\n            return m.functional.gelu(x)\n",
     "hands the module torch.nn to a match"),
    ("def custom_kernel(x):\n    m = torch.nn\n    return x if m == x else x\n",
     "hands the module torch.nn to an operator"),
    ("import functools\ndef custom_kernel(x):\n"
     "    return functools.reduce(getattr, ['_make_subclass'], torch.Tensor)\n",
     "builtin getattr as a value"),
    # a reading that cannot end is refused, not assumed
    ("def custom_kernel(x):\n    m = torch.nn\n    while x is not None:\n        m = m.deeper\n    return x\n",
     "cannot follow this file's names to an end"),
])
def test_library_objects_are_followed_through_names(body, fragment):
    problems = check(body)
    assert any(fragment in p for p in problems), problems


@pytest.mark.parametrize("body", [
    # library objects honest code keeps in names, containers, defaults and attributes
    "libdevice = tl.extra.cuda.libdevice\n@triton.jit\ndef k(p):\n    tl.store(p, libdevice.exp(tl.load(p)))\n"
    "def custom_kernel(x):\n    return x\n",
    "nn = torch.nn\nclass M(nn.Module):\n    def forward(self, x):\n        return x\n"
    "def custom_kernel(x):\n    return M()(x)\n",
    "T = torch.Tensor\ndef custom_kernel(x):\n    assert isinstance(x, T)\n    return x\n",
    "empty = torch.empty_like\ndef custom_kernel(x):\n    out = empty(x)\n    return out.view(-1).view_as(x)\n",
    "TL = {torch.float16: tl.float16, torch.float32: tl.float32}\n@triton.jit\ndef k(p, D: tl.constexpr):\n"
    "    tl.store(p, tl.load(p).to(D))\ndef custom_kernel(x):\n    k[(1,)](x, D=TL[x.dtype])\n    return x\n",
    "def custom_kernel(x, dtype=torch.float32):\n    out = torch.empty(x.shape, dtype=dtype, device=x.device)\n"
    "    return out.to(torch.float32).contiguous()\n",
    "class Launcher:\n    def __init__(self, block=1024):\n        self._block = block\n        self._cache = {}\n"
    "    def __call__(self, x):\n        out = self._cache.get(x.shape) or torch.empty_like(x)\n"
    "        copy_kernel[(1,)](out, x, x.numel(), BLOCK=self._block)\n        return out\n"
    "LAUNCH = Launcher()\ndef custom_kernel(x):\n    return LAUNCH(x)\n",
    "def custom_kernel(x):\n    for kernel, limit in ((copy_kernel, 1024), (copy_kernel, None)):\n"
    "        if limit is None or x.numel() <= limit:\n            out = torch.empty_like(x)\n"
    "            kernel[(1,)](out, x, x.numel(), BLOCK=1024)\n            return out\n",
    "def custom_kernel(x):\n    props = torch.cuda.get_device_properties(x.device)\n"
    "    n = props.multi_processor_count\n"
    "    with torch.cuda.device(x.device):\n        return x if n else x\n",
    "import functools\ndef launch(x, BLOCK):\n    out = torch.empty_like(x)\n"
    "    copy_kernel[(1,)](out, x, x.numel(), BLOCK=BLOCK)\n"
    "    return out\ndef custom_kernel(x):\n    return functools.partial(launch, BLOCK=128)(x)\n",
    "import enum\nclass Mode(enum.Enum):\n    ONE = 1\n    TWO = 2\ndef custom_kernel(x):\n"
    "    return x if Mode.ONE.value == 1 and Mode(2) is Mode.TWO else x\n",
    "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass Settings:\n    dtype: torch.dtype = torch.float32\n"
    "    block: int = 1024\ndef custom_kernel(x):\n    s = Settings(block=512)\n    return x.to(s.dtype)\n",
    "def custom_kernel(x):\n    m = torch.nn\n    if m is None:\n        return x\n    return x\n",
])
def test_honest_uses_of_library_objects_pass(body):
    assert check(body) == []
