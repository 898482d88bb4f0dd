"""The launch audit: what actually ran on the device while a candidate was called, seen by Nsight Compute from
outside the candidate's Python, against the kernels it is allowed to launch.

Before a kernel becomes a run's reported best, is exported (`evolve best`), or enters a leaderboard, it is audited
once per device. `Auditor.audit` runs `ncu --clock-control none --cache-control none --metrics
gpu__time_duration.sum --csv --target-processes all`, profiling from the start, around one process (the jailed
profiler child, harness/runner/profile.py `audit-target`) that makes every benchmark case's inputs, launches a marker
kernel, gives up root (as a user: jails itself apart from the report), imports the candidate and, per case, calls it
once to compile and warm up, once alone, and WINDOW_CALLS times in a row on inputs of their own, queued as a timing
window queues them (behind a wait on a word, then a write of another), with a marker after each part. ncu writes the
report where the candidate cannot. `judge` then reads the report's "Kernel Name" and duration columns:

- the kernels before the first marker are the inputs' (the candidate cannot launch anything before it is imported);
  everything after it, and every kernel of any other process, is the candidate's;
- each of those must be one it may launch: a name its compile rung listed (the verdict's compile rung, `kernels`, as
  the archive holds it), or a @triton.jit function of its source (parsed here, from the archived source: the compile
  rung compiles the test shapes only, and a shape-dispatch composite's large-shape kernel runs only at benchmark
  shapes), or a kernel CuTeDSL compiled from one of its @cute.kernel functions (named `kernel_cutlass_<function>_`
  and argument types that change with the shapes), or torch's fill kernel (FillFunctor: torch.zeros and zero_,
  which honest kernels use for accumulators and Triton's autotuner uses to flush the cache between configurations).
  Anything else fails: cuBLAS (`sm90_xmma_..._cublas`, `nvjet_...`), CUTLASS, cuDNN, ATen's computing kernels,
  torch.compile's, a kernel of unknown origin;
- an allowed name must itself be a plain identifier (what Triton names a kernel) that does not look like a library's:
  a candidate cannot make a cuBLAS kernel allowed by naming a dummy Triton kernel after it;
- every marker must be there (every call finished), and at least one allowed non-fill kernel must have run;
- the calls in a row must launch, together, WINDOW_CALLS times what the call alone launched, and none of their
  kernels may take more than twice as long as the same kernel alone: a window's calls deferred and merged into one
  launch (K calls' work with one launch's start-up and tail, which no call a user makes has) fail. Inside an
  evaluation the window cannot see this: the GPU runs one process's context at a time, and handing each call over on
  its own would put two context switches (about 0.3 ms on an H200) into every call.

A result is "passed", "failed" or "not run" (no ncu, no GPU, the counters refused, the child refused before the
candidate was imported); a "not run" says why wherever the best is reported, and the next occasion audits again. A
failure is for good: the kernel is never again reported as a best, exported or ranked.

What it does not see: a candidate that tells the audit's process from an evaluation's (ncu's libraries are loaded in
it) and behaves there; machine code of a library loaded under a new name (cuModuleLoadData); work done on the host
between copies (memcpy is not a kernel; its time is in the evaluation's windows).
"""
from __future__ import annotations

import ast
import csv
import io
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"
NCU_ARGS = ("--clock-control", "none", "--cache-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
            "--target-processes", "all")
REPORT_BYTES = 64 << 20  # a report larger than this is not read in part: the audit fails
TRIES = 5  # candidates audited in a row for one report before it stops looking for one that passes
from .harness.runner.profile import WINDOW_CALLS  # noqa: E402 - per case, calls queued in a row as a window does
MERGED_RATIO, MERGED_SLACK_NS = 2.0, 2000.0  # a kernel of those calls may take this much longer than alone
NEEDS_GPU = ("the launch audit needs a GPU: Nsight Compute watches the device, and this verdict came from the CPU "
             "interpreter")

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
MARKER = re.compile(r"\bspin_kernel\b")
# torch.zeros and fill_ (an accumulator set to zero); some ncu versions print ATen names without "at::"
FILL = re.compile(r"^(void )?(at::)?native::[\w:<>, ]*FillFunctor<")
LIBRARIES = [  # (pattern on the name, what it is); the first match names it. A templated or namespaced name can never
    # equal a Triton kernel's, so these are for the plain (extern "C") names libraries give kernels, and for names a
    # compile rung may not claim
    (r"cublas|nvjet|splitkreduce|gemv2|gemmsn|gemmk1|^(ampere|volta|turing|maxwell)_", "cuBLAS"),
    (r"cutlass", "CUTLASS"), (r"cudnn", "cuDNN"), (r"xmma|^sm\d{2,3}_", "cuBLAS or cuDNN"),
    (r"cufft", "cuFFT"), (r"curand", "cuRAND"), (r"cutensor", "cuTENSOR"), (r"nccl", "NCCL"),
    (r"^triton_(poi|red|per|tem|for|mm|bmm)_", "torch.compile (Inductor)"),
    (r"^fmha_v2|flash::|flashinfer", "a flash-attention library"),
    (r"^(void )?(cub|thrust)::|::cub::", "CUB or Thrust"),
    (r"^(void )?(at|c10|native)::|^aten_|\bspin_kernel\b", "ATen (torch)"),
]


@dataclass(frozen=True)
class Launch:
    id: int
    pid: str
    name: str
    ns: float | None = None  # its duration as ncu measured it (gpu__time_duration.sum), where the report has it


@dataclass(frozen=True)
class Audit:
    status: str  # PASSED, FAILED or NOT_RUN
    reason: str
    kernels: tuple = ()  # (name, launches) seen during the calls, most launched first
    allowed: tuple = ()  # the names it was judged against
    seconds: float = 0.0
    report: str = field(default="", repr=False)  # ncu's CSV (bounded), for the record
    recorded: bool = False  # read back from the archive, not run now

    @property
    def ran(self) -> bool:
        return self.status != NOT_RUN

    @property
    def line(self) -> str:
        """One line for wherever the best is reported."""
        if self.status == NOT_RUN:
            return f"launch audit not run: {self.reason}"
        took = f", {self.seconds:.1f} s" if self.seconds else ""
        return f"launch audit {self.status}: {self.reason} (Nsight Compute{took})"


class AuditError(ValueError):
    pass


CUTEDSL = "kernel_cutlass_"  # CuTeDSL names a kernel kernel_cutlass_<@cute.kernel function>_<argument types>_<n>


def library(name: str) -> str | None:
    """Which library a kernel's name says it comes from, or None. A CuTeDSL kernel's name is judged by what follows
    the DSL's own prefix (the candidate's function and its argument types)."""
    name = name[len(CUTEDSL):] if name.startswith(CUTEDSL) else name
    return next((label for pattern, label in LIBRARIES if re.search(pattern, name, re.IGNORECASE)), None)


def _permits(allowed) -> callable:
    """name -> whether it is one the candidate may launch: an allowed name, or a CuTeDSL kernel of an allowed
    `@cute.kernel` function (entries ending in `*`: its name's argument types change with the shapes compiled)."""
    exact = {n for n in allowed if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in allowed if n.endswith("*"))
    return lambda name: name in exact or (bool(prefixes) and name.startswith(prefixes))


def _shown(name: str, limit: int = 200) -> str:
    """A name as it may be printed and stored: printable characters only, bounded (the candidate chose it)."""
    text = "".join(c if c.isprintable() else "?" for c in name.strip())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_report(text: str) -> list[Launch]:
    """Every kernel launch of an `ncu --csv` report (any page: one row per launch, or one per launch and metric),
    in launch order; ncu's own `==` lines are skipped. Raises AuditError where there is no kernel table."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as exc:
        raise AuditError(f"the report is not CSV ncu writes ({exc})") from None
    header = next((i for i, row in enumerate(rows) if "Kernel Name" in row and "ID" in row), None)
    if header is None:
        raise AuditError("the report has no kernel table")
    at = {name: i for i, name in enumerate(rows[header])}
    launches: dict[int, Launch] = {}
    durations: dict[int, float] = {}
    for row in rows[header + 1:]:
        if len(row) != len(rows[header]) or not row[at["ID"]].strip().isdigit():
            continue  # the units row, or a line that is not a launch
        key = int(row[at["ID"]])
        pid = row[at["Process ID"]].strip() if "Process ID" in at else ""
        launches.setdefault(key, Launch(key, pid, row[at["Kernel Name"]].strip()))
        if "Metric Name" in at and row[at["Metric Name"]].strip() == "gpu__time_duration.sum":
            ns = _nanoseconds(row[at["Metric Value"]] if "Metric Value" in at else "",
                              row[at["Metric Unit"]] if "Metric Unit" in at else "")
            if ns is not None:
                durations[key] = ns
    return [Launch(k, launches[k].pid, launches[k].name, durations.get(k)) for k in sorted(launches)]


_UNITS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def _nanoseconds(value: str, unit: str) -> float | None:
    """A duration ncu printed ("10,144" nsecond), in nanoseconds; None where it is not one."""
    try:
        number = float(value.replace(",", "").strip())
    except ValueError:
        return None
    scale = _UNITS.get(unit.strip().lower())
    return number * scale if scale is not None and number >= 0 else None


def source_kernels(source: str) -> set[str]:
    """The names of the @triton.jit functions a source defines (with or without autotune or heuristics on top), and
    for each @cute.kernel function the prefix of the names CuTeDSL gives its compiled kernels ("kernel_cutlass_f_*")."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return set()

    def jit(node) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        return (isinstance(target, ast.Attribute) and target.attr == "jit") or \
            (isinstance(target, ast.Name) and target.id == "jit")

    def cute_kernel(node) -> bool:  # @cute.kernel (any alias of cutlass.cute)
        target = node.func if isinstance(node, ast.Call) else node
        return isinstance(target, ast.Attribute) and target.attr == "kernel"

    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)]
    return {node.name for node in functions if any(jit(d) for d in node.decorator_list)} | \
        {f"{CUTEDSL}{node.name}_*" for node in functions if any(cute_kernel(d) for d in node.decorator_list)}


def allowed_names(verdict, source: str | None) -> tuple[str, ...]:
    """What the candidate may launch: its compile rung's kernels (the verdict as archived) and its source's
    @triton.jit functions."""
    named = {str(k.get("name")) for k in (verdict.kernels if verdict is not None else ()) if isinstance(k, dict)}
    return tuple(sorted(named | source_kernels(source or "")))


def _calls_apart(launches: list[Launch], marks: list[int], permitted, window_calls: int) -> str | None:
    """Why the calls of one case were not each its own work, or None. Per case the audit's process launches a marker
    after the first (warming) call, after one call alone, and after `window_calls` calls in a row queued as a timing
    window queues them: those calls must launch, together, window_calls times what the one call alone launched, and
    none of their kernels may run much longer than the same kernel did alone (a launch doing other calls' work)."""
    def own(first: int, last: int) -> list[Launch]:
        return [launch for launch in launches[first + 1:last] if permitted(launch.name)]

    for case in range((len(marks) - 1) // 3):
        alone, window = own(marks[3 * case + 1], marks[3 * case + 2]), own(marks[3 * case + 2], marks[3 * case + 3])
        one, many = Counter(launch.name for launch in alone), Counter(launch.name for launch in window)
        if many != Counter({name: count * window_calls for name, count in one.items()}):
            def listed(counts):
                return ", ".join(f"{_shown(n, 60)} x{c}" for n, c in counts.most_common(3)) or "nothing"
            return (f"its {window_calls} calls in a row launched {listed(many)}, where one call alone launched "
                    f"{listed(one)}: each call must launch its own work (deferred or merged calls are timed as work "
                    f"no single call does)")
        for launch in window:
            longest = max((solo.ns for solo in alone if solo.name == launch.name and solo.ns is not None), default=None)
            if longest and launch.ns is not None and launch.ns > MERGED_RATIO * longest + MERGED_SLACK_NS:
                return (f"in its {window_calls} calls in a row, {_shown(launch.name, 60)} ran "
                        f"{launch.ns / longest:.1f}x as long as in one call alone ({launch.ns / 1e3:.1f} us against "
                        f"{longest / 1e3:.1f} us): one launch did other calls' work (calls were merged)")
    return None


def judge(launches: list[Launch], allowed, cases: int | None = None,
          window_calls: int = WINDOW_CALLS) -> tuple[str, str, tuple]:
    """(status, reason, kernels seen) for the launches of one audit against the names the candidate may launch.
    cases: how many benchmark cases the audit called (each with three markers after it, harness/runner/profile.py
    `audit-target`), so each case's calls are checked apart; None: a report with a first and a last marker only."""
    bad = sorted(n for n in allowed if not IDENTIFIER.fullmatch(n.removesuffix("*")) or library(n.removesuffix("*")))
    if bad:
        label = library(bad[0]) or "not a Triton kernel's name"
        return FAILED, f"it compiles a kernel named like a library's: {_shown(bad[0], 120)} ({label})", ()
    if not launches:
        return FAILED, "ncu saw no kernel at all: the report does not cover the calls", ()
    target = launches[0].pid  # the audit's own process launches first (the inputs, the first marker)
    own = [i for i, launch in enumerate(launches) if launch.pid == target and MARKER.search(launch.name)]
    if not own:
        return FAILED, "the audit's first marker kernel is missing: the report does not cover the calls", ()
    start, end = own[0], own[-1]
    marks = set(own) if cases is not None else {start, end}  # without cases, a marker between is not one
    during = [launch for i, launch in enumerate(launches)
              if (launch.pid == target and i > start and i not in marks) or launch.pid != target]
    seen = tuple(Counter(_shown(launch.name) for launch in during).most_common(50))
    permitted = _permits(allowed)
    foreign = [launch.name for launch in during if not permitted(launch.name) and not FILL.match(launch.name)]
    if foreign:
        label = library(foreign[0]) or "not one it compiled"
        more = f" and {len(foreign) - 1} more launch{'es' if len(foreign) > 2 else ''}" if len(foreign) > 1 else ""
        return FAILED, f"a kernel it did not compile ran: {_shown(foreign[0], 160)} ({label}){more}", seen
    if end == start or (cases is not None and len(own) != 1 + 3 * cases):
        return FAILED, "the calls did not all finish under ncu (the audit's last marker kernel is missing)", seen
    own_kernels = [launch for launch in during if permitted(launch.name)]
    if not own_kernels:
        return FAILED, "none of its own kernels ran during the calls", seen
    apart = _calls_apart(launches, own, permitted, window_calls) if cases is not None else None
    if apart:
        return FAILED, apart, seen
    fills = len(during) - len(own_kernels)
    names = Counter(launch.name for launch in own_kernels)
    listed = ", ".join(f"{_shown(n, 60)} x{c}" for n, c in names.most_common(4)) + (", ..." if len(names) > 4 else "")
    return PASSED, f"only its own kernels ran: {listed}" + (f" (and {fills} torch fills)" if fills else ""), seen


class Auditor:
    """Audits candidates one at a time; `unavailable` says why it cannot (None when it can), decided once."""

    def __init__(self, *, timeout_s: float = 300.0, ncu: str | None = None):
        from .profiling import find_ncu

        self.ncu = ncu or find_ncu()
        self.timeout_s = timeout_s
        self.unavailable = None if self.ncu else "ncu (Nsight Compute) is not on PATH"

    def audit(self, source: str, problem_dir, allowed, *, beside=None, gpu: str | None = None) -> Audit:
        """Run the source under ncu on every benchmark case of the problem and judge what ran. gpu: the card, as
        CUDA_VISIBLE_DEVICES names it (None: the first visible)."""
        if self.unavailable:
            return Audit(NOT_RUN, self.unavailable, allowed=tuple(allowed))
        started = time.monotonic()
        base = tempfile.gettempdir()
        if os.geteuid() == 0 and not _traversable(base):  # the target, once nobody, must reach its candidate
            base = "/tmp"
            if not _traversable(base):
                return Audit(NOT_RUN, "no temporary folder an unprivileged user can reach", allowed=tuple(allowed))
        work = None
        try:
            work = Path(tempfile.mkdtemp(prefix="evolve-audit-", dir=base))
            return self._audit(work, started, source, Path(problem_dir), tuple(allowed), beside, gpu)
        finally:
            if work is not None:
                from .profiling import _remove

                _remove(work)

    def _audit(self, work: Path, started: float, source: str, problem_dir: Path, allowed: tuple, beside,
               gpu) -> Audit:
        from .harness.runner.profile import ISOLATION_FAILED, JAIL_FAILED, REFUSED
        from .profiling import _ncu_problem, _read, read_bounded, run_child

        os.chmod(work, 0o711)  # the target, once it is nobody, can reach its files but write only in tmp/
        (work / "tmp").mkdir()
        os.chmod(work / "tmp", 0o1777)
        target = work / "candidate.py"
        target.write_text(source)
        for name, path in dict(beside or {}).items():  # {name beside the candidate: where it is} (beside_files)
            shutil.copyfile(path, work / name)
        job = {"mode": "audit", "candidate": str(target), "problem": str(problem_dir.resolve()), "ncu": self.ncu,
               "ncu_args": list(NCU_ARGS), "work": str(work), "seed": secrets.randbits(31), "beside": bool(beside)}
        code = run_child(work, job, self.timeout_s, gpu)

        def done(status: str, reason: str, kernels=(), report: str = "") -> Audit:
            return Audit(status, reason, kernels, allowed, round(time.monotonic() - started, 2), report[:2_000_000])

        if code is None:
            return done(FAILED, f"ncu did not finish within {self.timeout_s:g} s")
        stderr = _read(work / "stderr", 64 << 10)
        if code in (ISOLATION_FAILED, JAIL_FAILED):  # the launcher refused before ncu started: every time
            why = [line for line in stderr.splitlines() if line.startswith("not profiled:")][-1:] or [stderr[-300:]]
            self.unavailable = why[0].removeprefix("not profiled: ")[:300]
            return done(NOT_RUN, self.unavailable)
        refused = _read(work / REFUSED, 4000)  # only harness code, before the candidate, can have written it
        if refused:
            return done(NOT_RUN, _shown(refused, 500))
        report, whole = read_bounded(work / "ncu.csv", REPORT_BYTES)
        if not whole:
            return done(FAILED, f"the report is larger than {REPORT_BYTES >> 20} MB: too many launches to read", (),
                        report)
        problem = _ncu_problem(report)
        if problem and "permission" in problem.lower():  # ncu's own log, which the candidate cannot write
            self.unavailable = problem
            return done(NOT_RUN, problem, (), report)
        if problem:
            return done(FAILED, problem, (), report)
        try:
            launches = parse_report(report)
        except AuditError as exc:
            tail = " ".join(stderr.strip().splitlines()[-2:])[-300:]
            return done(FAILED, f"{exc}" + (f"; exit code {code}: {_shown(tail, 300)}" if code else ""), (), report)
        from .harness.shared.formats import load_problem

        status, reason, seen = judge(launches, allowed, len(load_problem(problem_dir).benchmarks))
        if status == FAILED and code and "marker" in reason:  # the candidate (or ncu) failed on the way
            tail = " ".join(stderr.strip().splitlines()[-2:])[-300:]
            reason += f"; exit code {code}: {_shown(tail, 300)}"
        return done(status, reason, seen, report)


def _traversable(folder: str) -> bool:
    """Whether every folder from the root down to this one lets any user pass through it."""
    path = Path(folder).resolve()
    try:
        return all(os.stat(p).st_mode & stat.S_IXOTH for p in [path, *path.parents])
    except OSError:
        return False


@dataclass(frozen=True)
class Picked:
    best: object  # the Candidate reported, or None
    audit: Audit | None  # its audit (None: no candidate)
    failed: tuple = ()  # (Candidate, Audit) of those that failed on the way, best first


def pick(archive, device: str, next_best, check, tries: int = TRIES, reuse: bool = True) -> Picked:
    """The best candidate that does not fail the launch audit on this device.

    next_best(): the best candidate the archive would report now (it leaves out every failed audit); check(cand):
    its audit. With `reuse`, a pass on record for the device stands without a check. Each new result is stored, so
    a failure moves on to the next best. After `tries` failures in a row nothing is reported."""
    failed = []
    for _ in range(tries):
        cand = next_best()
        if cand is None:
            return Picked(None, None, tuple(failed))
        held = from_record(archive.launch_audits.get(cand.id, device)) if reuse else None
        if held is not None and held.status == PASSED:
            return Picked(cand, held, tuple(failed))
        result = check(cand)
        if not result.recorded and (result.status != NOT_RUN or result.reason != NEEDS_GPU):
            archive.launch_audits.store(cand.id, device, result)
        if result.status != FAILED:
            return Picked(cand, result, tuple(failed))
        failed.append((cand, result))
    return Picked(None, Audit(NOT_RUN, f"{tries} candidates in a row failed the launch audit; none is reported"),
                  tuple(failed))


def from_record(row: dict | None) -> Audit | None:
    """An Audit from the archive's row (Archive.launch_audits.get), or None."""
    if row is None:
        return None
    return Audit(row["status"], row["reason"] or "", tuple(tuple(k) for k in row["kernels"]), tuple(row["allowed"]),
                 float(row["seconds"] or 0.0), recorded=True)


def recorded(archive, cand, device: str | None = None) -> Audit:
    """What is known of a candidate's audit without running one: its latest on record, else why there is none."""
    held = from_record(archive.launch_audits.get(cand.id, device))
    if held is not None:
        return held
    verdict = archive.verdict(cand.id)
    if verdict is not None and verdict.mode != "gpu":
        return Audit(NOT_RUN, NEEDS_GPU)
    return Audit(NOT_RUN, "not audited yet" + (f" on {device}" if device else ""))
