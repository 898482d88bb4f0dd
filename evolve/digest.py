"""A bounded digest of what the compiler produced, for the prompt: what a kernel engineer reads off SASS first.

Per kernel specialization, from the SASS the archive keeps (`Archive.artifacts`): registers, spills and local
memory traffic (LDL/STL), the width of global loads and stores (128-bit vectors or narrower), shared memory
traffic, barriers and warp shuffles, in all and inside the hot loop, and the hot loop's own lines. The hot loop is
the backward branch's span that holds the most global loads (ties: the shortest); without profiling it is the best
static guess. Nothing is cut here: the template (`prompts/_digest.j2`) says how many specializations and loop lines
it shows, and users may change those numbers.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")


@dataclass
class Counts:
    global_loads: dict = field(default_factory=dict)  # width in bits -> instructions
    global_stores: dict = field(default_factory=dict)
    local_loads: int = 0
    local_stores: int = 0
    shared_loads: int = 0
    shared_stores: int = 0
    barriers: int = 0
    shuffles: int = 0
    instructions: int = 0


@dataclass
class KernelDigest:
    name: str  # the file stem: NN_<kernel>
    about: str  # index.txt's line: architecture, warps, stages, argument types and constexprs
    regs: int | None = None
    spills: int | None = None
    total: Counts = field(default_factory=Counts)
    loop: Counts | None = None  # inside the hot loop
    loop_lines: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _width(opcode: str) -> int:
    parts = opcode.split(".")
    for bits in ("128", "64"):
        if bits in parts:
            return int(bits)
    if any(p in ("U16", "S16") for p in parts):
        return 16
    if any(p in ("U8", "S8") for p in parts):
        return 8
    return 32


def _opcode(text: str) -> str:
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def _count(instructions: list[tuple[int, str]]) -> Counts:
    c = Counts()
    for _, text in instructions:
        op = _opcode(text)
        base = op.split(".")[0]
        c.instructions += 1
        if base == "LDG":
            w = _width(op)
            c.global_loads[w] = c.global_loads.get(w, 0) + 1
        elif base == "STG":
            w = _width(op)
            c.global_stores[w] = c.global_stores.get(w, 0) + 1
        elif base == "LDL":
            c.local_loads += 1
        elif base == "STL":
            c.local_stores += 1
        elif base == "LDS":
            c.shared_loads += 1
        elif base == "STS":
            c.shared_stores += 1
        elif base == "BAR":
            c.barriers += 1
        elif base in ("SHFL", "REDUX"):
            c.shuffles += 1
    return c


def parse_sass(text: str) -> list[tuple[int, str]]:
    """(address, instruction) of the first function in a cuobjdump --dump-sass text."""
    out = []
    for match in _INSTRUCTION.finditer(text):
        out.append((int(match.group(1), 16), match.group(2).strip()))
    return out


def hot_loop(instructions: list[tuple[int, str]]) -> tuple[int, int] | None:
    """(start, end) addresses of the backward branch span with the most global loads (ties: the shortest)."""
    best = None
    for address, text in instructions:
        op = _opcode(text)
        if not op.startswith("BRA"):
            continue
        target = re.search(r"0x([0-9a-f]+)", text.split(op, 1)[-1])
        if not target:
            continue
        start = int(target.group(1), 16)
        if start >= address:
            continue
        loads = sum(1 for a, t in instructions if start <= a <= address and _opcode(t).startswith("LDG"))
        key = (loads, -(address - start))
        if best is None or key > best[0]:
            best = (key, (start, address))
    return best[1] if best else None


def digest_kernel(name: str, sass: str, about: str = "", regs: int | None = None,
                  spills: int | None = None) -> KernelDigest:
    instructions = parse_sass(sass)
    d = KernelDigest(name=name, about=about, regs=regs, spills=spills, total=_count(instructions))
    span = hot_loop(instructions)
    if span:
        inside = [(a, t) for a, t in instructions if span[0] <= a <= span[1]]
        d.loop = _count(inside)
        d.loop_lines = [f"/*{a:04x}*/ {t}" for a, t in inside]
    return d


def digest_candidate(archive, candidate_id: int, kernels=()) -> list[KernelDigest]:
    """Every specialization of a candidate whose SASS the archive keeps (cubin disassembled where SASS was not
    kept); `kernels` is the compile rung's list (registers and spills per kernel name)."""
    return digest_files(read_files(archive, candidate_id), kernels)


def read_files(archive, candidate_id: int) -> dict[str, bytes]:
    """What a digest is made of, read from the archive (in the archive's thread): {name: bytes} of the index and
    each specialization's SASS, or its cubin where no SASS was kept."""
    names = [a["name"] for a in archive.artifacts.listing(candidate_id)]
    if not names:
        return {}
    files = {"index.txt": archive.artifacts.read(candidate_id, "index.txt") or b""}
    for stem in sorted({n.rsplit(".", 1)[0] for n in names if n.endswith((".sass", ".cubin"))}):
        sass = archive.artifacts.read(candidate_id, f"{stem}.sass")
        files.update({f"{stem}.sass": sass} if sass is not None else {f"{stem}.cubin": archive.artifacts.read(
            candidate_id, f"{stem}.cubin")})
    return files


def digest_files(files: dict[str, bytes], kernels=()) -> list[KernelDigest]:
    """The digest of the files read_files read (any thread: the cubins are disassembled side by side)."""
    if not files:
        return []
    index = files.get("index.txt", b"").decode(errors="replace").splitlines()
    about = {line.split()[0]: " ".join(line.split()[1:]) for line in index if line.split()}
    resources, by_name = {}, {}
    for k in kernels or ():
        if isinstance(k, dict) and k.get("name"):
            by_name.setdefault(k["name"], k)  # older verdicts name no files: the first specialization's figures
            for file in k.get("files") or ():
                resources[str(file).rsplit(".", 1)[0]] = k  # "02_softmax_row_kernel": this specialization's own
    stems = sorted({n.rsplit(".", 1)[0] for n in files if n.endswith((".sass", ".cubin"))})
    texts = {stem: files.get(f"{stem}.sass") for stem in stems}
    missing = {stem: files.get(f"{stem}.cubin") for stem, raw in texts.items() if raw is None}
    done = {}
    if missing:  # kept without SASS (evolve run leaves it out of the evaluation): cuobjdump side by side
        from concurrent.futures import ThreadPoolExecutor

        from .harness.runner.sass import disassemble

        with ThreadPoolExecutor(max_workers=8) as pool:
            done = dict(zip(missing, pool.map(lambda cubin: disassemble(cubin) if cubin else None,
                                              missing.values())))
    out = []
    for stem in stems:
        raw = texts[stem]
        text = raw.decode(errors="replace") if raw is not None else done.get(stem)
        if not text:
            continue
        r = resources.get(stem) or by_name.get(stem.split("_", 1)[-1], {})
        out.append(digest_kernel(stem, text, about.get(stem, ""), r.get("regs"), r.get("spills")))
    # the specializations most worth a look first: those that spill, then those with the most global loads
    out.sort(key=lambda d: (-(d.spills or 0) - d.total.local_loads - d.total.local_stores,
                            -sum(d.total.global_loads.values()), d.name))
    return out
