"""Imports run one way: the harness (and the candidate language's rules) import nothing of the loop, and nothing
imports in a circle."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "evolve"


def _imports(path: Path) -> set[str]:
    """The evolve modules a file imports (as dotted names under evolve)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("evolve"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evolve"):
            found.add(node.module)
    modules = {".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
               for p in PACKAGE.rglob("*.py")}
    return {name for name in found if name in modules} - {module}


def test_the_harness_imports_nothing_of_the_loop():
    allowed = ("evolve.harness", "evolve.lang", "evolve.redact", "evolve.defaults")
    for path in list((PACKAGE / "harness").rglob("*.py")) + list((PACKAGE / "lang").glob("*.py")):
        outside = {m for m in _imports(path) if not m.startswith(allowed)}
        assert not outside, f"{path.name} imports {outside}"


def test_no_module_imports_in_a_circle():
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = _imports(path) - {name}

    assert {"evolve.population", "evolve.harness"} <= graph["evolve.search"]  # the reading itself works
    assert "evolve.lang" in graph["evolve.harness.runner.static.check"]

    def visit(node, trail):
        assert node not in trail, " -> ".join(trail[trail.index(node):] + [node])
        for nxt in graph.get(node, ()):
            if not nxt.startswith(node + ".") and not node.startswith(nxt + "."):  # a package and its own modules
                visit(nxt, trail + [node])

    for name in graph:
        visit(name, [])


def test_a_language_is_reached_only_through_the_interface():
    """Outside evolve/lang, nothing imports a language's own package: the harness, the search and the CLI ask
    evolve.lang for the language a problem or a run names."""
    for path in PACKAGE.rglob("*.py"):
        if (PACKAGE / "lang") in path.parents:
            continue
        languages = {m for m in _imports(path) if m.startswith("evolve.lang.")}
        assert not languages, f"{path.relative_to(PACKAGE)} imports {languages}: use evolve.lang.get(name)"


def test_the_runner_knows_its_candidates_language_only_through_the_interface():
    """The runner (the process that imports the candidate) sees launches, compiled kernels and the language's own
    copies through the runner side evolve.lang hands it (lang/triton/runner_side.py): it imports no language itself."""
    tree = ast.parse((PACKAGE / "harness" / "runner" / "runner.py").read_text())
    imported = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name.split(".")[0] in ("triton", "cutlass", "tilelang")}, imported
    assert "lang" in imported  # `from ..lang import get`: the one way in


def test_strategies_import_no_search():
    """A strategy reads a View and returns Proposals: nothing under evolve/strategies imports the search, the ledger,
    the pipeline or the CLI, and the ledger imports no search."""
    loop = {"evolve.search", "evolve.ledger", "evolve.pipeline", "evolve.lanes", "evolve.cli", "evolve.api"}
    for path in (PACKAGE / "strategies").glob("*.py"):
        assert not _imports(path) & loop, f"strategies/{path.name} imports {_imports(path) & loop}"
    assert not _imports(PACKAGE / "ledger.py") & {"evolve.search", "evolve.cli", "evolve.api"}


# Which of the harness's folders each folder's modules may import, besides the standard library, torch, Triton,
# evolve.lang and evolve.redact. The runner's folder runs beside candidate code, so it reads nothing of the trusted
# processes' own code; the measurer reads nothing of the parent's; what they share imports none of the three.
HARNESS_FOLDERS = {
    "runner": ("runner", "shared"),
    "measurer": ("measurer", "shared"),
    "shared": ("shared",),
}


def test_each_process_imports_only_its_own_folder_and_the_shared_one():
    """harness/runner/ (the runner, its keeper, the jailed children) imports nothing of harness/measurer/ or
    harness/parent/; harness/measurer/ nothing of harness/parent/ or harness/runner/; harness/shared/ nothing of the
    three. Lazy imports inside functions count as much as the ones at the top."""
    harness = PACKAGE / "harness"
    folders = {p.name for p in harness.iterdir() if (p / "__init__.py").exists()}
    assert {"parent", "measurer", "runner", "shared"} <= folders, folders  # the reading itself works
    loose = sorted(p.name for p in harness.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"harness/ holds modules outside its folders: {loose}"
    wrong = []
    for folder, allowed in HARNESS_FOLDERS.items():
        for path in sorted((harness / folder).rglob("*.py")):
            for name in sorted(_imports(path)):
                parts = name.split(".")
                if parts[:2] != ["evolve", "harness"]:
                    continue
                if len(parts) == 2 or parts[2] not in allowed:
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not wrong, "\n".join(wrong)



def test_no_class_over_400_lines_and_no_function_over_100():
    """A screen per function, a few per class: the limits the code is held to, counted from the source."""
    over = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            limit = 400 if isinstance(node, ast.ClassDef) else \
                100 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            if limit is not None and node.end_lineno - node.lineno + 1 > limit:
                over.append(f"{path.relative_to(PACKAGE)}: {node.name} is {node.end_lineno - node.lineno + 1} lines")
    assert not over, "\n".join(over)
