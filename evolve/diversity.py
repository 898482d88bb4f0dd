"""The diversity archive (MAP-Elites): each correct kernel's cell, each cell's elite, and a parent drawn across cells.

A cell is three features a person would name when telling two kernels apart, read cheaply and deterministically
from what evolve already has (the source, and the compile rung's kernels where a verdict is at hand):

- the structure family (`family`): the candidate language and, per kernel function (`@triton.jit`, `@cute.kernel`,
  `@T.prim_func`, ...), its control structure: one pass or how many loops (a persistent loop over programs apart),
  and whether it uses `tl.dot`/`gemm`, block pointers, TMA descriptors, atomics or 2-D tiles. Constants, names and
  knob values are not read, so a tuned setting or an edited constant stays in its parent's family, while a one-pass
  softmax and a looped (online) one are two. This is the axis the search loses first: a population that exploits
  its top fills up with small edits of one structure, and another structure that starts slower is never built on.
- the tile size (`tile`): the product of the tile-like knobs (BLOCK, TILE, CHUNK, BM/BN/BK, ...; knobs.py reads
  them from KNOBS or the launches' literals), by powers of 4: within one structure, the tile is the setting that
  most changes which shapes a kernel is fast on. 0 where the source declares none (a block chosen per shape).
- the registers per thread (`regs`), by the occupancy they allow on a Hopper SM (32, 64, 128, 255 registers: full,
  half, a quarter, an eighth): known only from a GPU compile; 0 elsewhere (the CPU interpreter).

Which benchmark case a kernel leads on is not a feature: it depends on the rest of the population and would move a
kernel between cells as others arrive; the tuner already works on each case's leader (strategies/tuning.py).

Each cell keeps its elite, the best of its members by the population's ranking. `draw_across` picks a structure
family uniformly, then one of its occupied cells, then that cell's elite: a family that fills many cells with tuned
settings is drawn no more often than one with a single kernel. population.py mixes this draw with its own
exploit-the-top draw by a share (SearchConfig.diversity, default 0.5; docs/search.md says why).
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from .archive import Candidate
from .knobs import read_knobs

# a decorator naming a kernel function, in each language: triton.jit/autotune/heuristics, cute.kernel/jit,
# T.prim_func, tilelang.jit
KERNEL_DECORATORS = {"jit", "kernel", "prim_func", "autotune", "heuristics"}
ELEMENTWISE_LOOPS = {"Parallel", "vectorized", "Vectorized"}  # a loop over a tile's elements, not a pass over data
FEATURE_CALLS = {  # a call's last name -> the feature it marks
    "dot": "dot", "gemm": "dot", "make_block_ptr": "block-ptr", "make_tensor_descriptor": "TMA",
    "_experimental_make_tensor_descriptor": "TMA", "_experimental_descriptor_load": "TMA",
    "CopyBulkTensorTileG2SOp": "TMA",
}
LANGUAGE_IMPORTS = (("cutlass", "cutedsl"), ("tilelang", "tilelang"), ("triton", "triton"))  # first found names it
TILE_KNOB = re.compile(r"BLOCK|TILE|CHUNK|^B[MNK]$|^B[MNK]_|_B[MNK]$", re.IGNORECASE)
THRESHOLD_KNOB = re.compile(r"^(MAX|MIN)_", re.IGNORECASE)  # MAX_SINGLE_BLOCK: a limit, not a tile
REGISTER_STEPS = (32, 64, 128, 255)  # registers per thread at full, half, quarter and eighth occupancy (65536 a SM)


@dataclass(frozen=True, order=True)
class Cell:
    family: str
    tile: int = 0  # a power of 4 at or above the tile knobs' product; 0: none declared
    regs: int = 0  # a step of REGISTER_STEPS at or above the kernels' registers; 0: not known

    @property
    def column(self) -> str:
        """The tile and registers, as the run page's column heads read."""
        tile = f"tile ≤{_count(self.tile)}" if self.tile else "tile per shape"
        return f"{tile} · regs ≤{self.regs}" if self.regs else tile


def _count(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K" if n >= 1 << 10 else str(n)


def cell_of(cand: Candidate, verdict=None) -> Cell:
    """A kernel's cell, from its source and, where given, its verdict's compiled kernels."""
    source = cand.source or ""
    return Cell(family(source), tile_bucket(source), register_bucket(verdict.kernels if verdict is not None else ()))


# --- the structure family ---------------------------------------------------------------------------------------

def family(source: str) -> str:
    """'triton: 2 loops | one-pass': the language and each kernel's structure, sorted (definition order and names
    do not count)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return "unparsed"
    language = _language(tree)
    kernels = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and any(_last_name(d) in KERNEL_DECORATORS for d in node.decorator_list)]
    if not kernels:
        return f"{language}: no kernel function"
    return f"{language}: " + " | ".join(sorted(_kernel_shape(k) for k in kernels))


def _language(tree: ast.Module) -> str:
    imported = set()
    for node in tree.body:  # a module's own imports: a function's are not its language
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    return next((language for module, language in LANGUAGE_IMPORTS if module in imported), "python")


def _last_name(node: ast.AST) -> str:
    """`triton.jit` -> 'jit', `triton.autotune(...)` -> 'autotune', `tl.dot` -> 'dot'."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _kernel_shape(kernel: ast.AST) -> str:
    """'one-pass', '2 loops', 'persistent', '1 loop nested', with its features: '1 loop dot+TMA'."""
    passes, depth, persistent = _loops(kernel.body, 0)
    shape = "persistent" if persistent else "one-pass" if not passes else \
        f"{passes} loop{'s' if passes > 1 else ''}{' nested' if depth > 1 else ''}"
    features = set()
    for node in ast.walk(kernel):
        if isinstance(node, ast.Call):
            name = _last_name(node)
            feature = "atomic" if name.startswith("atomic") else FEATURE_CALLS.get(name)
            if feature:
                features.add(feature)
        elif isinstance(node, ast.Subscript) and _broadcasts(node.slice):
            features.add("2-D")
    return f"{shape} {'+'.join(sorted(features))}" if features else shape


def _loops(body: list, depth: int) -> tuple[int, int, bool]:
    """(loops at this level, deepest nesting, a loop over programs) of a block of statements. A loop over a tile's
    elements (T.Parallel) is not a pass: the loops inside it count at its level."""
    passes, deepest, persistent = 0, depth, False
    for stmt in body:
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            elementwise = isinstance(stmt, ast.For) and _last_name(stmt.iter) in ELEMENTWISE_LOOPS
            if not elementwise and isinstance(stmt, ast.For):
                persistent |= "num_programs" in ast.dump(stmt.iter)
            inner, inner_depth, inner_persistent = _loops(stmt.body, depth if elementwise else depth + 1)
            passes += inner if elementwise else 1
            deepest, persistent = max(deepest, inner_depth), persistent or inner_persistent
            continue
        for block in _blocks(stmt):  # an if's branches, a with's body: the same level
            inner, inner_depth, inner_persistent = _loops(block, depth)
            passes, deepest, persistent = passes + inner, max(deepest, inner_depth), persistent or inner_persistent
    return passes, deepest, persistent


def _blocks(stmt: ast.stmt) -> list[list]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []  # a nested kernel is a kernel of its own
    return [getattr(stmt, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, name, None),
                                                                                          list)]


def _broadcasts(index: ast.AST) -> bool:
    """x[:, None] or x[None, :]: a 2-D tile built from 1-D ranges."""
    return isinstance(index, ast.Tuple) and any(isinstance(e, ast.Constant) and e.value is None for e in index.elts)


# --- tile and registers -----------------------------------------------------------------------------------------

def tile_bucket(source: str) -> int:
    """The power of 4 at or above the product of the source's tile knobs; 0 where it declares none."""
    knobs = read_knobs(source)[0] or {}
    sizes = [v for name, v in knobs.items() if TILE_KNOB.search(name) and not THRESHOLD_KNOB.search(name)
             and isinstance(v, int) and not isinstance(v, bool) and v > 1]
    if not sizes:
        return 0
    return 4 ** math.ceil(math.log(math.prod(sizes), 4) - 1e-9)


def register_bucket(kernels: Iterable[Mapping]) -> int:
    """The occupancy step of the most registers any compiled kernel uses; 0 where none is known."""
    regs = [k.get("regs") for k in kernels if isinstance(k, Mapping) and isinstance(k.get("regs"), int)]
    if not regs:
        return 0
    return next((step for step in REGISTER_STEPS if max(regs) <= step), REGISTER_STEPS[-1])


# --- elites and the draw across cells ---------------------------------------------------------------------------

def elites(ranked: Iterable[Candidate], cells: Mapping[int, Cell]) -> dict[Cell, Candidate]:
    """Each occupied cell's elite: the first of its members in `ranked` (best first)."""
    out: dict[Cell, Candidate] = {}
    for cand in ranked:
        cell = cells.get(cand.id)
        if cell is not None:
            out.setdefault(cell, cand)
    return out


def draw_across(elite_of: Mapping[Cell, Candidate], rng) -> Candidate | None:
    """A family uniformly, then one of its occupied cells uniformly, then that cell's elite (sorted first, so a
    seeded generator draws the same again)."""
    if not elite_of:
        return None
    chosen = rng.choice(sorted({cell.family for cell in elite_of}))
    return elite_of[rng.choice(sorted(cell for cell in elite_of if cell.family == chosen))]


def run_elites(archive, run_id: int) -> dict[Cell, Candidate]:
    """A finished or running run's cells and their elites, read from the archive (the run page, `evolve status`)."""
    correct = [c for c in archive.candidates(run_id) if c.ok and c.score is not None]
    cells = {c.id: cell_of(c, archive.verdict(c.id)) for c in correct}
    return elites(sorted(correct, key=lambda c: -(c.fitness if c.fitness is not None else c.score)), cells)
