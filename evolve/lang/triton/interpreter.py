"""Triton's CPU interpreter, with one of its costs taken once instead of on every call; what it computes is unchanged.

Under `TRITON_INTERPRET=1`, every call of a `@triton.jit` function from inside a kernel (`tl.max`, `tl.sum`, a
candidate's own helpers) runs once per program of the grid, and each such call re-patches `triton.language`: Triton's
`_patch_builtin` lists the members of up to four of the language's modules with `inspect.getmembers` (about 350,
sorted, each tested with `is_builtin`) to find the builtins to wrap. A softmax row kernel makes 12 such calls per
program, and the listing is about half of the interpreter's time (a 1000 x 1000 float32 launch, one program per row:
3.1 s, 1.3 s without it; `benchmarks/interpreter.py`).

`speed_up()` takes, once, before any kernel has run, the names of each module's members that are builtins, and
replaces `_patch_builtin` with a version that visits those names only. At every call it still tests what each name
holds at that moment and wraps exactly the members that are builtins then, with Triton's own `_patch_attr`: upstream
wraps a member when it is a builtin at call time, and a member that is not a builtin in the clean modules becomes one
only if code assigns a builtin to a module attribute, which Triton never does (its patches put wrappers in, and
restoring puts the clean members back). A module it did not list (another Triton's layout) goes to the original.
Used by the CPU mode's runner only (the process that runs candidate code under the interpreter); nothing it changes is
read by a verdict but through the kernels' outputs, which `tests/test_interpreter.py` checks are the same bit for bit.
"""
from __future__ import annotations

import inspect

_INSTALLED: dict = {}  # id(module) -> (module, builtin names) once speed_up() has run


def speed_up() -> bool:
    """Install the listing taken once; False (and nothing changed) where this Triton's interpreter differs."""
    if _INSTALLED:
        return True
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except Exception:  # noqa: BLE001 - no Triton, or one whose interpreter does not import: nothing to speed up
        return False
    original = getattr(interpreter, "_patch_builtin", None)
    is_builtin = getattr(getattr(tl, "core", None), "is_builtin", None)
    if not callable(original) or not callable(is_builtin) or not callable(getattr(interpreter, "_patch_attr", None)):
        return False
    try:
        if list(inspect.signature(original).parameters) != ["pkg", "builder", "scope"]:
            return False
    except (TypeError, ValueError):
        return False
    modules = [tl, tl.core, getattr(tl, "tensor", None), getattr(tl, "math", None),
               getattr(tl.core, "tensor_descriptor_base", None)]
    known = {}
    for module in modules:
        if module is not None:
            known[id(module)] = (module, tuple(name for name, member in inspect.getmembers(module)
                                               if is_builtin(member)))

    def _patch_builtin(pkg, builder, scope):
        entry = known.get(id(pkg))
        if entry is None or entry[0] is not pkg:
            return original(pkg, builder, scope)
        patch_attr = interpreter._patch_attr
        for name in entry[1]:
            member = getattr(pkg, name, None)
            if is_builtin(member):
                patch_attr(pkg, name, member, builder, scope)
        return None

    _patch_builtin.original = original
    interpreter._patch_builtin = _patch_builtin
    _INSTALLED.update(known)
    return True
