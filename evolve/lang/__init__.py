"""Candidate languages behind one interface: a language is a package here (`evolve/lang/triton/`), or an installed
package that names one under the entry-point group `evolve.languages`. The harness, the search and the CLI reach a
language only through `get(name)` and the `Language` it returns."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

DEFAULT = "triton"
BUILT_IN = {"triton": "evolve.lang.triton", "cutedsl": "evolve.lang.cutedsl",  # name -> module holding LANGUAGE
            "tilelang": "evolve.lang.tilelang"}
ENTRY_POINTS = "evolve.languages"  # an installed language: `name = "package.module:LANGUAGE"`


@dataclass(frozen=True)
class StaticRules:
    """The tables the static check (harness/runner/static/check.py) reads: what Python a candidate file may hold is the
    same for every language hosted in Python; these say what is the language's own."""
    allowed_modules: tuple[str, ...]  # top-level modules a file may import
    host_torch_compute: tuple[str, ...]  # dotted prefixes of torch that compute on the host
    host_torch_allocation: frozenset  # torch functions that only allocate or describe memory
    host_data_escapes: frozenset  # tensor methods that hand data to plain Python
    kernel_tensor_escapes: frozenset  # tensor methods a kernel body may not call
    kernel_introspection_builtins: frozenset  # builtins a kernel body may not call
    kernel_introspection_attributes: frozenset  # attributes a kernel body may not read
    kernel_decorators: frozenset  # the decorators that make a function a kernel (dotted, resolved)
    kernel_modules: tuple[str, ...]  # what a kernel body may name: these modules and their public members
    kernel_helpers: frozenset  # and these dotted names of the language (its decorators and helpers)
    rules: dict  # key -> Rule: every rule the load rung enforces, with what it protects
    kernel_markers: frozenset = frozenset({"triton.jit", "triton.language.jit"})  # decorators that make a kernel body
    kernel_word: str = "@triton.jit"  # what the check's messages call a kernel function
    kernel_module: str = "triton.language"  # what a kernel computes with, as the messages say it
    kernel_names: str = "triton.language (and math)"  # what a kernel may name, as the messages say it
    launches: str = "Triton kernels"  # what host code may launch, as the messages say it
    # Calls every lane of a warp must reach together (a full-warp shuffle inside): named under a runtime branch or
    # loop of a kernel body, the lanes that took it wait for the others forever and the kernel hangs.
    warp_uniform_calls: frozenset = frozenset()


@dataclass(frozen=True)
class Language:
    """What the rest of evolve knows of a candidate language."""
    name: str
    rules: StaticRules
    prompt_contract: Callable[..., str]  # (forbid_calls) -> the contract as every prompt states it
    rule_table: Callable[[], str]  # the rule table docs/languages.md carries
    without_gpu: str  # what it can do on a machine without a GPU: "interpret" (run and compile), "compile" or "none"
    artifact_kinds: tuple[str, ...]  # the compiler artifacts `evolve show --asm` can print
    # The runner's half (harness/runner/runner.py), made in the runner before the candidate is imported: (mode) -> an
    # object with display, nothing_launched, warm_up(), launches, kernels, compile_figures(), copy_is_its_own(),
    # is_compile_error(error), describe(work, sass), dump(info, folder, index), build_launchers()
    # (lang/triton/runner_side.py is Triton's).
    runner_side: Callable[[str], object]
    runner_env: Callable[..., dict]  # (runner name, its folder) -> what its environment adds (caches, interpreter)
    cache_folder: str  # the compiled-kernel cache under a runner's folder, handed between runners (harness/shared/)
    cache_levels: int = 1  # how many folders below that cache's root it keeps files (shared/compiled.copy_cache)
    warm_modules: tuple[str, ...] = ()  # what the fork server imports ahead for its runners (harness/parent/forkserver)
    prompt_folder: str = ""  # a folder in the prompt templates whose templates come before the shared (Triton's) ones
    context_folder: str = ""  # its folder of evolve's context notes (context/<folder>), which its models search
    context_sources: tuple[str, ...] = ()  # folders of installed packages its models search: "package/sub/folder"
    requires: tuple[str, ...] = ()  # top-level packages it needs installed, and how to get them:
    install: str = ""  # what to run when one is missing


def missing(language: Language) -> str | None:
    """What to install before this language can be used here, or None (found without importing anything)."""
    import importlib.util

    absent = [name for name in language.requires if importlib.util.find_spec(name) is None]
    if not absent:
        return None
    return f"{language.name} needs {', '.join(absent)}, which is not installed here: {language.install}"


def source_folders(language: Language) -> list:
    """The installed folders of Language.context_sources that exist here, found without importing the packages."""
    import importlib.util
    from pathlib import Path

    folders = []
    for source in language.context_sources:
        package, _, rest = source.partition("/")
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for root in (spec.submodule_search_locations or []) if spec else []:
            if (Path(root) / rest).is_dir():
                folders.append(Path(root) / rest)
                break
    return folders


class UnknownLanguage(ValueError):
    """No language of that name is built in or installed; str() names those that are."""


def names() -> list[str]:
    return sorted({*BUILT_IN, *(ep.name for ep in _entry_points())})


def get(name: str = DEFAULT) -> Language:
    """The language called `name`: built in, or installed under the entry-point group."""
    if name in BUILT_IN:
        return importlib.import_module(BUILT_IN[name]).LANGUAGE
    for ep in _entry_points():
        if ep.name == name:
            language = ep.load()
            if not isinstance(language, Language):
                raise UnknownLanguage(f"the entry point {ep.value!r} ({ENTRY_POINTS}) is not an evolve.lang.Language")
            return language
    raise UnknownLanguage(f"no candidate language {name!r}: the languages here are {', '.join(names())}")


def _entry_points():
    from importlib.metadata import entry_points

    return entry_points(group=ENTRY_POINTS)


def named_by_imports(source: str, accepted) -> str | None:
    """The one language of `accepted` whose packages the source imports (Triton's: triton; the others': what they
    require), or None where none or several are."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    found = [name for name in accepted if set(get(name).requires or (name,)) & imported]
    return found[0] if len(found) == 1 else None
