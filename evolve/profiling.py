"""Nsight Compute profiles of the best candidates: one benchmark case, a compact summary for the archive and prompt.

`Profiler.profile(...)` runs `ncu --clock-control none` (the clocks stay as the harness measured them) in a jailed
child (`harness/runner/profile.py`) around one call of a candidate that has already passed the ladder, on one benchmark
case, and parses the report's raw page (`--csv --page raw`) into a summary per kernel:

- duration, DRAM throughput as a fraction of peak, SM throughput, L2 hit rate;
- achieved and theoretical occupancy, and what limits the theoretical one (registers, shared memory, warps, blocks);
- registers per thread, block and grid size, waves per SM;
- the top stall reasons (cycles a warp waited per issued instruction);
- a verdict: memory- or compute-bound by the roofline of the case (its bytes against its flops at the device's
  measured peaks), and how close the kernel is to the bound it has.

A profile never changes a verdict or a fitness. Without `ncu`, without permission to read the counters, or as root
without `--profile-as-root`, one line says why and the run goes on unprofiled.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis", "WarpStateStats",
            "ComputeWorkloadAnalysis")
MAX_KERNELS = 8  # kernels profiled per call (each costs several replays); a candidate launching more is cut there

# raw metric name -> summary key
METRICS = {
    "gpu__time_duration.sum": "duration_ns",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "dram__bytes.sum.per_second": "dram_bytes_per_s",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical_occupancy_pct",
    "launch__registers_per_thread": "registers",
    "launch__block_size": "block",
    "launch__grid_size": "grid",
    "launch__waves_per_multiprocessor": "waves",
    "launch__shared_mem_per_block": "shared_bytes",
    "sass__inst_executed_register_spilling": "spill_instructions",
}
LIMITERS = {"launch__occupancy_limit_registers": "registers", "launch__occupancy_limit_shared_mem": "shared memory",
            "launch__occupancy_limit_warps": "warps", "launch__occupancy_limit_blocks": "blocks",
            "launch__occupancy_limit_barriers": "barriers"}
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
NOT_STALLS = {"selected"}  # "selected" is the issuing warp itself, not a wait


class ReportError(ValueError):
    pass


def _number(text: str) -> float | None:
    t = (text or "").strip().replace(",", "")
    if not t or t in ("n/a", "no data"):
        return None
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_raw(text: str) -> list[dict]:
    """The kernels of an `ncu --csv --page raw` report (ncu's own `==PROF==` lines are skipped): one dict per
    kernel launch with the METRICS keys (None where the report has no value), `limiter`, `stalls` (reason -> cycles
    per issued instruction, largest first) and `name`. Raises ReportError when there is no table."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as exc:  # e.g. a field over csv's limit: not a report ncu wrote
        raise ReportError(f"the report is not CSV ncu writes ({exc})") from None
    if len(rows) < 2 or "Kernel Name" not in rows[0]:
        raise ReportError("no kernel table in the report (did the candidate launch a kernel between "
                          "cudaProfilerStart and cudaProfilerStop?)")
    header = rows[0]
    body = [row for row in rows[1:] if row and row[0].strip().isdigit()]  # the units row has no ID
    at = {name: i for i, name in enumerate(header)}
    kernels = []
    for row in body:
        if len(row) != len(header):
            continue
        # only identifier characters of a name reach a prompt (the profiled process could have written the file)
        k = {"name": re.sub(r"[^A-Za-z0-9_]", "", row[at["Kernel Name"]])[:80] or "kernel"}
        for metric, key in METRICS.items():
            k[key] = _number(row[at[metric]]) if metric in at else None
        limits = {label: _number(row[at[m]]) for m, label in LIMITERS.items() if m in at}
        limits = {label: v for label, v in limits.items() if v is not None}
        k["limiter"] = min(limits, key=limits.get) if limits else None
        k["limits"] = limits
        stalls = {}
        for name, i in at.items():
            if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
                reason = name[len(STALL_PREFIX):-len(STALL_SUFFIX)]
                value = _number(row[i])
                if reason not in NOT_STALLS and value and re.fullmatch(r"[a-z_]{1,40}", reason):
                    stalls[reason] = value
        k["stalls"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1])[:4])
        kernels.append(k)
    if not kernels:
        raise ReportError("the report's kernel table is empty")
    return kernels


def verdict(kernels: list[dict], bound_kind: str | None) -> str:
    """One line: what bounds the case by the roofline ("memory" or "compute", from the harness's bound for the case),
    and where the kernels stand against it."""
    total = sum(k["duration_ns"] or 0 for k in kernels)
    if total <= 0:
        return "no kernel time was measured"
    weight = {id(k): (k["duration_ns"] or 0) / total for k in kernels}
    dram = sum((k["dram_pct"] or 0) * weight[id(k)] for k in kernels)
    sm = sum((k["sm_pct"] or 0) * weight[id(k)] for k in kernels)
    label = f"{bound_kind}-bound by the roofline; " if bound_kind else ""
    if max(dram, sm) < 60:
        return (f"{label}DRAM at {dram:.0f}% and SM at {sm:.0f}% of peak: neither is busy, so the time goes to "
                f"latency (see the stalls), launch overhead or too little parallelism")
    if dram >= sm:
        return f"{label}DRAM at {dram:.0f}% of peak ({100 - dram:.0f}% headroom), SM at {sm:.0f}%"
    return f"{label}SM at {sm:.0f}% of peak, DRAM at {dram:.0f}%"


def summarize(kernels: list[dict], bound_kind: str | None = None) -> dict:
    return {"kernels": kernels[:MAX_KERNELS], "verdict": verdict(kernels, bound_kind),
            "duration_ns": sum(k["duration_ns"] or 0 for k in kernels)}


def render(summary: dict) -> str:
    """The summary as a few lines for a prompt or `evolve show`."""
    lines = [f"Nsight Compute on {summary.get('case', 'one case')}: {summary['verdict']}."]
    for k in summary["kernels"]:
        def pct(key):
            return f"{k[key]:.0f}%" if k.get(key) is not None else "?"
        us = f"{k['duration_ns'] / 1000:.1f} us" if k.get("duration_ns") else "? us"
        occ = (f"occupancy {pct('achieved_occupancy_pct')} achieved of {pct('theoretical_occupancy_pct')} "
               f"theoretical" + (f" (limited by {k['limiter']})" if k.get("limiter") else ""))
        stalls = ", ".join(f"{r.replace('_', ' ')} {v:.1f}" for r, v in k.get("stalls", {}).items())
        regs = f"{k['registers']:.0f} regs/thread" if k.get("registers") is not None else ""
        shape = (f"block {k['block']:.0f}, grid {k['grid']:.0f}" if k.get("block") and k.get("grid") else "")
        moved = (f" ({k['dram_bytes_per_s'] * k['duration_ns'] * 1e-15:.1f} MB moved)"  # bytes read and written
                 if k.get("dram_bytes_per_s") and k.get("duration_ns") else "")
        lines.append(f"- {k['name']}: {us}; DRAM {pct('dram_pct')} of peak{moved}, SM {pct('sm_pct')}, L2 hit "
                     f"{pct('l2_hit_pct')}; {occ}; {', '.join(filter(None, [regs, shape]))}"
                     + (f"; top stalls (cycles per issued instruction): {stalls}" if stalls else ""))
    return "\n".join(lines)


def choose_case(shapes: list[dict]) -> int | None:
    """The benchmark case most like the candidate as a whole: its fraction of roofline nearest the geometric mean of
    all of them (the larger bound on a tie). shapes: the verdict's per-case rows, in benchmark order."""
    fractions = [(i, s.get("roofline_fraction")) for i, s in enumerate(shapes)]
    fractions = [(i, f) for i, f in fractions if f and f > 0]
    if not fractions:
        return None
    mean = math.exp(sum(math.log(f) for _, f in fractions) / len(fractions))
    return min(fractions, key=lambda item: (abs(math.log(item[1] / mean)), -(shapes[item[0]].get("bound_ms") or 0)))[0]


def chosen_row(verdict, labels: list[str]) -> dict | None:
    """The per-case row of a GPU verdict that choose_case picks, where its case is one of the problem's benchmark
    labels; None for a CPU verdict, none at all, or no such case."""
    if verdict is None or verdict.mode != "gpu":
        return None
    index = choose_case(list(verdict.shapes))
    if index is None or verdict.shapes[index]["case"] not in labels:
        return None
    return verdict.shapes[index]


@dataclass
class Result:
    ok: bool
    seconds: float
    message: str = ""  # why not, when not ok
    summary: dict = field(default_factory=dict)
    report: str = ""  # ncu's raw CSV, bounded


def find_ncu() -> str | None:
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",) if os.access(p, os.X_OK)), None)


class Profiler:
    """Profiles candidates one at a time; `unavailable` says why not (None when it can), decided once."""

    def __init__(self, *, allow_root: bool = False, timeout_s: float = 180.0, ncu: str | None = None):
        self.ncu = ncu or find_ncu()
        self.timeout_s = timeout_s
        self.unavailable: str | None = None
        self.denied: set[str] = set()  # candidates whose profile said the counters cannot be read
        if self.ncu is None:
            self.unavailable = "ncu (Nsight Compute) is not on PATH"
        elif os.geteuid() == 0 and not allow_root:
            self.unavailable = ("running as root: the profiler's child may write under /proc, which as root reaches "
                                "/proc/sys; run as a user with counter access, or pass --profile-as-root")

    def profile(self, candidate: Path, problem_dir: Path, case: int, *, beside=None, bound_kind: str | None = None,
                case_label: str = "", gpu: str | None = None) -> Result:
        """gpu: the card, as CUDA_VISIBLE_DEVICES names it (None: the first visible)."""
        started = time.monotonic()
        if self.unavailable:
            return Result(False, 0.0, self.unavailable)
        work = None
        try:
            work = Path(tempfile.mkdtemp(prefix="evolve-profile-"))
            return self._profile(work, started, candidate, problem_dir, case, beside, bound_kind, case_label, gpu)
        except Exception as exc:  # noqa: BLE001 - a profile is advice: whatever goes wrong, the run goes on
            return Result(False, time.monotonic() - started, f"profiling failed: {type(exc).__name__}: {exc}"[:300])
        finally:
            if work is not None:
                _remove(work)

    def _profile(self, work, started, candidate, problem_dir, case, beside, bound_kind, case_label, gpu) -> Result:
        from .harness.runner.profile import ISOLATION_FAILED, JAIL_FAILED

        target = work / "candidate.py"
        shutil.copyfile(candidate, target)
        for name, path in dict(beside or {}).items():  # {name beside the candidate: where it is} (beside_files)
            shutil.copyfile(path, work / name)
        args = ["--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all",
                "--launch-count", str(MAX_KERNELS), "--csv", "--page", "raw"]
        for section in SECTIONS:
            args += ["--section", section]
        job = {"candidate": str(target), "problem": str(problem_dir), "case": case, "ncu": self.ncu,
               "ncu_args": args, "work": str(work), "seed": secrets.randbits(31), "beside": bool(beside)}
        code = run_child(work, job, self.timeout_s, gpu)
        seconds = time.monotonic() - started
        if code is None:
            return Result(False, seconds, f"ncu did not finish within {self.timeout_s:g} s")
        report, stderr = _read(work / "ncu.csv"), _read(work / "stderr", 64 << 10)
        if code in (ISOLATION_FAILED, JAIL_FAILED):  # the launcher refused (before any candidate code ran): the same
            # would happen every time, and its reason is the last line of stderr
            why = [line for line in stderr.splitlines() if line.startswith("not profiled:")][-1:] or [stderr[-300:]]
            self.unavailable = why[0].removeprefix("not profiled: ")[:300]
            return Result(False, seconds, self.unavailable)
        problem = _ncu_problem(report)
        if problem:
            # the log sits where the profiled process can write too: profiling stops for the run only when two
            # different candidates' profiles say the counters cannot be read
            if "permission" in problem.lower():
                self.denied.add(str(candidate))
                if len(self.denied) >= 2:
                    self.unavailable = problem
            return Result(False, seconds, problem)
        try:
            kernels = parse_raw(report)
        except ReportError as exc:
            tail = " ".join(stderr.strip().splitlines()[-2:])[-300:]
            return Result(False, seconds, f"{exc}" + (f"; exit code {code}: {tail}" if code else ""))
        summary = summarize(kernels, bound_kind)
        summary["case"] = case_label or f"benchmark case {case}"
        return Result(True, seconds, "", summary, report[:200_000])


def run_child(work: Path, job: dict, timeout_s: float, gpu: str | None) -> int | None:
    """Run the jailed profiler child (harness/runner/profile.py `launch`) on `job` (written to work/job.json, with the
    lifeline added), holding the card against other evolve processes while its kernels run under ncu. The
    launcher's exit code, or None when it did not finish within timeout_s (everything it started is killed)."""
    from .harness.parent.lease import card_lock
    from .harness.shared.lifeline import kill_everything
    from .harness.parent.forkserver import limit
    from .harness.parent.sandbox import RUNNER_FILE_BYTES, _env

    life_r, life_w = os.pipe()  # the launcher kills the profile when this closes (evolve is gone)
    (work / "job.json").write_text(json.dumps({**job, "lifeline": life_r}))
    token = secrets.token_hex(16)
    env = _env(token, work, {"HOME": str(work)}, gpu)
    hold = card_lock("gpu", gpu)  # no other evolve process times on the card while its kernels are replayed
    hold.acquire()
    try:
        try:
            with open(work / "stdout", "wb") as out, open(work / "stderr", "wb") as err:
                proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.runner.profile", "launch",
                                         str(work / "job.json")], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        cwd=work, env=env, start_new_session=True,
                                        preexec_fn=lambda: limit(RUNNER_FILE_BYTES),
                                        pass_fds=(life_r,))
        finally:
            os.close(life_r)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_everything([proc.pid], token)
            proc.wait()
            os.close(life_w)
    finally:
        hold.release()
    return code


def read_bounded(path: Path, limit: int) -> tuple[str, bool]:
    """(text, whole): at most `limit` bytes of a regular file, read as _read does, and whether that was all of it."""
    data = _read_bytes(path, limit + 1)
    return data[:limit].decode(errors="replace"), len(data) <= limit


def _read(path: Path, limit: int = 2_000_000) -> str:
    return _read_bytes(path, limit).decode(errors="replace")


def _read_bytes(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file the profiled process could have replaced: no link is followed, and a
    FIFO or device is not read (opening does not block either)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _remove(folder: Path) -> None:
    """Remove the work folder, whatever modes the profiled process left on what it made there."""
    def retry(function, path, _exc):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700) if not os.path.islink(path) else None
            function(path)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=retry)
    else:
        shutil.rmtree(folder, onerror=retry)


def _ncu_problem(text: str) -> str | None:
    """ncu's own error lines in its log, as one message (the candidate's exit code alone is not one)."""
    for line in text.splitlines():
        if line.startswith("==ERROR==") and "returned an error code" not in line:
            message = line[len("==ERROR=="):].strip()
            if "ERR_NVGPUCTRPERM" in message or "permission" in message.lower():
                return ("no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): see "
                        "https://developer.nvidia.com/ERR_NVGPUCTRPERM")
            return f"ncu: {message[:300]}"
    return None
