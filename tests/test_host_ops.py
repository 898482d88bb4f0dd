"""What host code may do, at the edges the problem formats opened: copies are the op log's business unless Triton's
own autotuner makes them (restore_value), and a GPU MODE task's names stand only in type annotations."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from evolve.harness.runner.runner import COPY_OPS
from evolve.lang.triton.runner_side import RunnerSide
from evolve.harness.runner.static.check import check_source


def defined(source: str, filename: str, namespace: dict | None = None) -> dict:
    namespace = {} if namespace is None else namespace
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - a test's own two-line functions
    return namespace


def logged(fn) -> list[str]:
    """The ops the runner's op log keeps from fn(t), by the runner's rule for copies."""
    ops = []

    class OpLog(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._overloadpacket.__name__
            if name not in COPY_OPS or not RunnerSide.copy_is_its_own():
                ops.append(name)
            return func(*args, **(kwargs or {}))

    t = torch.randn(4)
    with OpLog():
        fn(t)
    return ops


COPIES = "def f(t):\n    saved = {0: t.clone()}\n    t.copy_(saved[0])\n"
AUTOTUNER = "/site-packages/triton/runtime/autotuner.py"


def test_the_autotuners_own_restore_copies_are_not_the_candidates():
    assert logged(defined(COPIES, AUTOTUNER)["f"]) == []
    assert logged(defined(COPIES, "/work/candidate.py")["f"]) == ["clone", "copy_"]
    # a candidate's function called by the autotuner (a config's pre_hook) is still the candidate's
    mine = defined(COPIES, "/work/candidate.py")["f"]
    hook = defined("def f(t):\n    mine(t)\n", AUTOTUNER, {"mine": mine})["f"]
    assert logged(hook) == ["clone", "copy_"]


KERNEL = "import torch\nimport triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\n"


def test_task_names_only_as_annotations():
    ok = KERNEL + "from task import input_t, output_t\n\n\ndef custom_kernel(data: input_t) -> output_t:\n" \
                  "    k[(1,)](data)\n    return data\n"
    assert check_source(ok, "c.py", allow_modules=("task",)) == []
    smuggled = KERNEL + "from task import torch as T\n\n\ndef custom_kernel(data):\n    return T.softmax(data, -1)\n"
    assert any("outside a type annotation" in p for p in check_source(smuggled, "c.py", allow_modules=("task",)))
    whole = KERNEL + "import task\n\n\ndef custom_kernel(data):\n    return task.torch.exp(data)\n"
    assert any("imports task as a module" in p for p in check_source(whole, "c.py", allow_modules=("task",)))
    assert any("imports task" in p for p in check_source(ok, "c.py"))  # only a GPU MODE problem allows it at all
