"""The profiler's child: Nsight Compute around one call of a candidate on one benchmark case.

    python -m evolve.harness.runner.profile launch JOB
                                                   namespaces, then in their process 1 the jail and
                                                   `ncu ... python -m evolve.harness.runner.profile target JOB`
    python -m evolve.harness.runner.profile target JOB
                                                   (under ncu) make the case's inputs, call the candidate once to
                                                   compile and warm up, then once more between cudaProfilerStart and
                                                   cudaProfilerStop: only that call's kernels are profiled
    python -m evolve.harness.runner.profile audit-target JOB
                                                   (under ncu, profiled from its start: the launch audit,
                                                   evolve/launch_audit.py) make every benchmark case's inputs, launch
                                                   a marker kernel, give up root (or, as a user, jail itself apart from
                                                   ncu's report), import the candidate, call it twice per case, launch
                                                   the marker again

    python -m evolve.harness.runner.profile trace-target JOB
                                                   (no ncu: `launch` execs it in process 1, jailed to the work
                                                   folder and its own /proc entry) the case's inputs, a stamp buffer,
                                                   the candidate's copy with its section marks turned into stamps,
                                                   two calls (warm-up, traced), the buffer to trace.bin
                                                   (evolve/tracing.py reads it)

JOB is a JSON file the parent wrote: candidate, problem, case index, seed, ncu path and arguments, work folder.

`launch` first moves into namespaces of its own (`isolate`): a network namespace with only loopback up (nothing
outside the machine, nor any other service on it, can be reached), a mount namespace holding a /proc of its own and a
pid namespace in which ncu is process 1 (the /proc it sees lists only the profile's processes, and when ncu dies,
all of them die); as a user other than root, a user namespace that maps the user onto itself makes that possible.
Then, in the forked process 1, the jail (Landlock, as the runner's) before ncu starts, so ncu and everything it
starts are inside it: writes only beneath the work folder and that private /proc (the profiled process is ncu's child,
whose /proc entry cannot be named before it exists, and CUDA writes there), TCP only on Nsight Compute's own ports
(on loopback, in that namespace), no signals to processes outside. The launching process runs no candidate code: it
waits for process 1, and kills it when the parent is gone (its lifeline closes). Whether profiling was refused is
said by the launcher alone, through a pipe process 1 writes only before ncu starts (it closes at the exec), so no exit
code of ncu or of the candidate reads as a refusal. What the profiled process reports is advice for the next prompt
and never enters a verdict; the parent reads the report as numbers.

The launch audit's target is different: its report decides whether a kernel may be reported, exported or ranked, so
the candidate must not be able to write it. Everything the target does before importing the candidate is harness
code: it makes the inputs (their kernels come before the first marker, which the candidate cannot launch ahead of its
own import), then, as root, drops to an unprivileged user (the work folder and ncu's report stay root's; only
`tmp/`, world-writable and sticky, takes its writes), or, as a user, applies a second Landlock jail of its own that
allows writes beneath `tmp/` only. Where it cannot, it writes `refused` (the candidate never ran, so nothing else
can have written it) and exits: the audit was not run, and says why.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from ..shared.privilege import UNPRIVILEGED, drop  # the audit's target runs as nobody when started as root

WINDOW_CALLS = 4  # per case, the calls the launch audit queues in a row as a timing window does
NCU_PORTS = range(49152, 49152 + 64)  # ncu's default base port and its default --max-connections


CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
ISOLATION_FAILED, JAIL_FAILED = 3, 4  # launch's exit codes when it refuses to profile
REFUSED = "refused"  # in the work folder: why the audit's target stopped before it imported the candidate


def isolate() -> str | None:
    """Enter new network, mount and pid namespaces (and a user namespace unless root). None, or why not."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | (CLONE_NEWUSER if uid != 0 else 0)
    if libc.unshare(flags) != 0:
        return f"unshare failed ({os.strerror(ctypes.get_errno())})"
    if uid != 0:
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
        except OSError as exc:
            return f"the user namespace could not be mapped ({exc})"
    return None


def _inside(job: dict, job_path: str) -> tuple[int, str]:
    """Process 1 of the new pid namespace: a private /proc, loopback up, the jail, then ncu (no return). Returns
    (refusal code, why) where one of them cannot be made."""
    import ctypes
    import fcntl
    import socket
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    work = job["work"]
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
            libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        return ISOLATION_FAILED, f"no private /proc ({os.strerror(ctypes.get_errno())})"
    try:
        with socket.socket() as sock:
            flags = struct.unpack("16sH14x", fcntl.ioctl(sock, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
            fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS: IFF_UP
    except OSError as exc:
        return ISOLATION_FAILED, f"loopback could not be brought up ({exc})"
    from . import jail

    if job.get("mode") == "trace":  # no ncu: this process becomes the traced one, and only its own /proc entry is
        # writable (so as root nothing under /proc/sys is)
        status = jail.apply([work, f"/proc/{os.getpid()}"])
        if not status.startswith("landlock"):
            return JAIL_FAILED, f"the jail could not be applied ({status})"
        os.environ.update({"HOME": work, "TMPDIR": work})
        os.execv(sys.executable, [sys.executable, "-m", "evolve.harness.runner.profile", "trace-target", job_path])
    status = jail.apply([work, "/proc"], ports=NCU_PORTS)
    if not status.startswith("landlock"):
        return JAIL_FAILED, f"the jail could not be applied ({status})"
    if job.get("mode") == "audit":  # tmp/, where its target writes once it has given up root
        home = str(Path(work, "tmp"))
        os.environ.update({"TRITON_HOME": home, "TRITON_CACHE_DIR": str(Path(home, ".triton", "cache"))})
    else:
        home = work
    os.environ.update({"HOME": home, "TMPDIR": home})
    argv = [job["ncu"], *job["ncu_args"], "--log-file", str(Path(work, "ncu.csv")),
            sys.executable, "-m", "evolve.harness.runner.profile",
            "audit-target" if job.get("mode") == "audit" else "target", job_path]
    os.execv(job["ncu"], argv)
    return ISOLATION_FAILED, "not reached"


def launch(job_path: str) -> int:
    """0 when ncu ran and exited 0, 1 when it (or the profiled process) failed, ISOLATION_FAILED or JAIL_FAILED
    (with the reason on stderr) only when the launcher or its process 1 refused before ncu started."""
    job = json.loads(Path(job_path).read_text())
    problem = isolate()
    if problem:
        print(f"not profiled: the profiler's namespaces could not be made ({problem})", file=sys.stderr)
        return ISOLATION_FAILED
    lifeline = job.get("lifeline")
    refusal_r, refusal_w = os.pipe()  # not inherited across exec: it closes, empty, when ncu starts
    child = os.fork()
    if child == 0:
        os.close(refusal_r)
        try:
            code, why = _inside(job, job_path)
        except BaseException as exc:  # noqa: BLE001 - process 1 must not fall back into launch's code
            code, why = ISOLATION_FAILED, f"{type(exc).__name__}: {exc}"
        os.write(refusal_w, bytes([code]) + why.encode()[:1000])
        os._exit(code)
    os.close(refusal_w)
    import select
    import signal
    import time

    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            refusal = os.read(refusal_r, 2048)
            if refusal:
                print(f"not profiled: {refusal[1:].decode(errors='replace')}", file=sys.stderr)
                return refusal[0]
            return 0 if os.waitstatus_to_exitcode(status) == 0 else 1
        if lifeline is None:
            time.sleep(0.2)
            continue
        ready, _, _ = select.select([lifeline], [], [], 0.2)
        if ready and not os.read(lifeline, 1):  # the parent is gone: process 1 dies, and its namespace with it
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return 1


def _import_candidate(job: dict, path):
    """The candidate (the file at path, as the module `candidate`), with its folder on sys.path where the problem
    keeps files beside it."""
    spec = importlib.util.spec_from_file_location("candidate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    if job.get("beside"):
        sys.path.insert(0, str(Path(job["candidate"]).parent))
    spec.loader.exec_module(module)
    return module


def _caller(module, inputs):
    """One call of the candidate on a case's inputs, as the runner makes it."""
    if inputs.tree is not None:
        return lambda: module.custom_kernel(inputs.data)
    return lambda: module.custom_kernel(*inputs.leaves)


def target(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    import torch

    from ..shared.formats import load_problem, reference_for

    problem = load_problem(job["problem"])
    reference = reference_for(problem)
    case = problem.benchmarks[job["case"]]
    inputs = reference.generate(case, job["seed"], torch.device("cuda"))
    call = _caller(_import_candidate(job, job["candidate"]), inputs)
    call()  # compiles, autotunes, warms caches
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


def trace_target(job_path: str) -> int:
    """Make the case's inputs and a zeroed stamp buffer on the card, import the candidate's copy with its section
    marks turned into stamps at that buffer's address (sections.py), call it once to compile and warm up, zero the
    buffer, call it once more, and write the buffer to trace.bin and that call's time (CUDA events) to trace_ms."""
    job = json.loads(Path(job_path).read_text())
    import torch

    from ..shared.formats import load_problem, reference_for
    from . import sections

    problem = load_problem(job["problem"])
    reference = reference_for(problem)
    inputs = reference.generate(problem.benchmarks[job["case"]], job["seed"], torch.device("cuda"))
    source = Path(job["candidate"]).read_text()
    marks = sections.find(source)
    stamps = torch.zeros(sections.buffer_bytes(len(marks)) // 8, dtype=torch.int64, device="cuda")
    traced = Path(job["work"], "traced.py")
    traced.write_text(sections.instrument(source, stamps.data_ptr(), marks))
    call = _caller(_import_candidate(job, traced), inputs)
    call()  # compiles, autotunes, warms caches
    torch.cuda.synchronize()
    stamps.zero_()
    began, ended = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began.record()
    call()
    ended.record()
    torch.cuda.synchronize()
    Path(job["work"], "trace.bin").write_bytes(stamps.cpu().numpy().tobytes())
    Path(job["work"], "trace_ms").write_text(repr(began.elapsed_time(ended)))  # the traced call, stamps and all
    return 0


def _marker() -> None:
    """The audit's marker: a kernel of torch's own (ncu lists it as `...spin_kernel...`), launched and finished."""
    import torch

    torch.cuda.synchronize()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()


def _refuse(work: str, why: str) -> int:
    """Say why the audit stops before the candidate is imported (only harness code has run: nobody else wrote it)."""
    print(f"launch audit not run: {why}", file=sys.stderr)
    fd = os.open(Path(work, REFUSED), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(why[:1000])
    return 0


def restrict(work: str) -> str | None:
    """Keep the candidate from writing ncu's report and `refused`: as a user, a second jail, writes beneath tmp/ only
    (it must be applied while this process has one thread: before torch is imported). As root this does nothing
    here (privilege.drop does it, later). None, or why not."""
    if os.geteuid() == 0:
        return None
    from . import jail

    status = jail.apply([str(Path(work, "tmp")), "/proc"], ports=NCU_PORTS)
    return None if status.startswith("landlock") else f"the target could not jail itself apart from the report " \
                                                        f"({status})"


def audit_target(job_path: str) -> int:
    """Under ncu, profiled from its start: what ran on the device while the candidate was called on every benchmark
    case. Inputs are made and the first marker launched before the candidate is imported. Per case: one call that
    compiles and warms up, a marker, one call alone, a marker, WINDOW_CALLS calls on inputs of their own queued in a
    row between a wait on a word and a write of another (as a timing window queues them), a marker
    (evolve/launch_audit.py judges each part)."""
    job = json.loads(Path(job_path).read_text())
    work = job["work"]
    why = restrict(work)
    if why:
        return _refuse(work, why)
    try:
        import torch
        import triton  # noqa: F401 - imported while the installed packages are surely readable (before the drop)

        from ..shared import cuda_ipc
        from ..shared.formats import load_problem, reference_for
        from ..shared.formats.base import unflatten

        problem = load_problem(job["problem"])
        reference = reference_for(problem)
        cases = []
        for index, case in enumerate(problem.benchmarks):
            sets = []
            for call in range(1 + WINDOW_CALLS):
                inputs = reference.generate(case, job["seed"] + 64 * index + call, torch.device("cuda"))
                # contiguous, as the GPU runner is given them (a copy here, not in the candidate's calls)
                leaves = tuple(t.contiguous() if isinstance(t, torch.Tensor) else t for t in inputs.leaves)
                sets.append((unflatten(leaves, inputs.tree),) if inputs.tree is not None else leaves)
            cases.append(sets)
        words = cuda_ipc.alloc(8)  # a gate word (set now) and a done word, as a timing window has
        stream = torch.cuda.current_stream().cuda_stream
        cuda_ipc.write_value(stream, words, 1)
        _marker()
    except Exception as exc:  # noqa: BLE001 - the problem's own code: the candidate has not run
        return _refuse(work, f"the inputs could not be made ({type(exc).__name__}: {exc})"[:500])
    if os.geteuid() == 0:
        why = drop(UNPRIVILEGED)
        if why:
            return _refuse(work, why)
    module = _import_candidate(job, job["candidate"])
    for sets in cases:
        for _ in range(2):  # warming, then alone
            out = module.custom_kernel(*sets[0])
            torch.cuda.synchronize()
            del out
            _marker()
        cuda_ipc.wait_value(stream, words, 1)
        outs = [module.custom_kernel(*args) for args in sets[1:]]
        cuda_ipc.write_value(stream, words + 4, 1)
        torch.cuda.synchronize()
        del outs
        _marker()
    return 0


def main(argv) -> int:
    commands = {"launch": launch, "target": target, "audit-target": audit_target, "trace-target": trace_target}
    if len(argv) != 3 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    return commands[argv[1]](argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
