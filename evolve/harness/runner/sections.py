"""Sections a Triton kernel marks for `evolve trace`, and the copy of its source that records them.

A candidate marks sections with comment lines inside a `@triton.jit` function:

    # section: load
    x = tl.load(...)
    # section: reduce
    ...
    # section: end

Comments change nothing in a verdict. Only the trace's child rewrites its own copy of the file: each mark becomes one
statement (an inline PTX block) that lane 0 of every warp runs, storing the SM's cycle counter (`%clock64`) and the
GPU's nanosecond clock (`%globaltimer`) into a slot of a buffer whose address is written into the statement as a
number: slot (CTA, warp, mark). A section runs from its mark to the next mark of the same function; a mark named `end`
only closes the one before it. A mark inside a loop is stored on every pass, so the slot keeps the last pass; the
compiler may move loads across a mark (the stores stay in order), so a section's figure is what the compiled code
does between two stamps, not a count of source lines.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

MARK = re.compile(r"#\s*section:\s*([A-Za-z_][A-Za-z0-9_]{0,39})\s*$")
MAX_CTAS = 4096  # CTAs recorded (by linear block index); a larger grid is traced on its first MAX_CTAS
WARPS = 32  # warp slots per CTA (1024 threads)
MAX_MARKS = 32  # marks per file
SLOT_BYTES = 16  # two u64: clock64, globaltimer
END = "end"
ALIAS = "_evolve_stamp_tl"  # triton.language, under a name of the traced copy's own


class SectionError(ValueError):
    pass


@dataclass(frozen=True)
class Mark:
    function: str  # the @triton.jit function it is in
    name: str
    line: int  # 1-based line of the comment
    indent: str


def _is_jit(node: ast.FunctionDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name) and target.id == "jit":  # from triton import jit
            return True
        if isinstance(target, ast.Attribute) and target.attr == "jit" and getattr(target.value, "id", "") == "triton":
            return True
    return False


def _last_line(node: ast.FunctionDef, lines: list[str]) -> int:
    """The function's last line, counting the comment lines indented under it that follow its last statement (where
    a closing mark sits)."""
    last = node.end_lineno
    for number in range(last + 1, len(lines) + 1):
        text = lines[number - 1]
        if not text.strip():
            continue
        if text.strip().startswith("#") and len(text) - len(text.lstrip()) > node.col_offset:
            last = number
            continue
        break
    return last


def find(source: str) -> list[Mark]:
    """The marks of a file, in order: `# section: NAME` comments on lines of their own inside a @triton.jit
    function's body. Raises SectionError on a file that does not parse or marks that cannot be traced."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise SectionError(f"the file does not parse ({exc.msg}, line {exc.lineno})") from None
    lines = source.splitlines()
    spans = [(node.lineno, _last_line(node, lines), node.name) for node in ast.walk(tree)
             if isinstance(node, ast.FunctionDef) and _is_jit(node)]
    marks = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError) as exc:
        raise SectionError(f"the file does not tokenize ({exc})") from None
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        found = MARK.match(tok.string)
        line = tok.start[0]
        if not found or lines[line - 1].strip() != tok.string.strip():
            continue  # a mark is a comment on a line of its own
        inside = [name for first, last, name in spans if first <= line <= last]
        if inside:
            marks.append(Mark(inside[-1], found.group(1), line, lines[line - 1][:tok.start[1]]))
    if len(marks) > MAX_MARKS:
        raise SectionError(f"{len(marks)} section marks; at most {MAX_MARKS} are traced")
    for mark in marks:  # each must stand between statements, where its stamp will
        try:
            ast.parse(instrument(source, 0, [mark]))
        except SyntaxError:
            raise SectionError(f"the mark on line {mark.line} ({mark.name}) is inside a statement; put it on a line "
                               "of its own between two statements") from None
    return marks


def stamp_ptx(base: int, index: int, marks: int) -> str:
    """The PTX one mark becomes: lane 0 of each warp of the first MAX_CTAS CTAs stores (clock64, globaltimer) at
    base + ((cta * WARPS + warp) * marks + index) * SLOT_BYTES."""
    stride = marks * SLOT_BYTES
    return ("{ .reg .u64 ev_c, ev_g, ev_a; .reg .u32 ev_x, ev_y, ev_z, ev_n, ev_t, ev_w; .reg .pred ev_p; "
            "mov.u64 ev_c, %clock64; mov.u64 ev_g, %globaltimer; "
            "mov.u32 ev_x, %ctaid.x; mov.u32 ev_y, %ctaid.y; mov.u32 ev_z, %ctaid.z; "
            "mov.u32 ev_n, %nctaid.y; mad.lo.u32 ev_z, ev_z, ev_n, ev_y; "
            "mov.u32 ev_n, %nctaid.x; mad.lo.u32 ev_x, ev_z, ev_n, ev_x; "
            "mov.u32 ev_t, %tid.x; shr.u32 ev_w, ev_t, 5; and.b32 ev_t, ev_t, 31; "
            f"setp.lt.u32 ev_p, ev_x, {MAX_CTAS}; setp.eq.and.u32 ev_p, ev_t, 0, ev_p; "
            f"mad.lo.u32 ev_x, ev_x, {WARPS}, ev_w; mul.wide.u32 ev_a, ev_x, {stride}; "
            f"add.u64 ev_a, ev_a, {base + index * SLOT_BYTES}; "
            "@ev_p st.global.v2.u64 [ev_a], {ev_c, ev_g}; mov.u32 $0, 0; }")


def instrument(source: str, base: int, marks: list[Mark] | None = None) -> str:
    """The source with every mark replaced by its stamp (a statement at the comment's indentation), and
    triton.language imported at its end under ALIAS for the stamps."""
    marks = find(source) if marks is None else marks
    lines = source.splitlines()
    for index, mark in enumerate(marks):
        asm = stamp_ptx(base, index, len(marks))
        lines[mark.line - 1] = (f"{mark.indent}{ALIAS}.inline_asm_elementwise({asm!r}, '=r,r', "
                                f"[{ALIAS}.program_id(0)], dtype={ALIAS}.int32, is_pure=False, pack=1)"
                                f"  # section: {mark.name}")
    # the alias the stamps use, bound at the end so no line moves (a kernel reads its globals when it compiles)
    return "\n".join(lines) + f"\nimport triton.language as {ALIAS}  # noqa: E402\n"


def buffer_bytes(marks: int) -> int:
    return MAX_CTAS * WARPS * marks * SLOT_BYTES
