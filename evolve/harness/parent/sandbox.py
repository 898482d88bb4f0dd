"""The processes of one evaluation: a measurer and its runner(s), their pipes, limits, and a kill that leaves nothing.

Each process starts in a session (process group) of its own. The runner gets two pipes to the measurer and nothing
else; the measurer gets the job on a pipe only the parent writes, the runner pipes, and a pipe of its own to the
parent, on which every message is signed. At the wall-clock limit, or when a runner's memory passes the limit, every
group is killed, and then every process that still carries the evaluation's token in its environment (one that
started a new session to escape the group kill, say). The processes are forked from the fork server for their
settings (harness/parent/forkserver.py), which has torch and Triton imported, or started as interpreters where none
runs.
"""
from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...lang import DEFAULT as DEFAULT_LANGUAGE
from ...lang import get as get_language
from ...redact import is_secret_name
from ..runner import jail
from ..runner.keeper import CGROUP_ENV, NAMESPACES_ENV
from ..shared import privilege, processes
from ..shared.lifeline import ENV as LIFELINE_ENV
from ..shared.lifeline import kill_everything
from ..shared.protocol import MEASURER
from ..shared.wire import Malformed, parse
from . import forkserver, isolation, memory_reader
from .lease import card_name

PACKAGE_ROOT = Path(__file__).resolve().parents[3]
KEEPER = str(Path(__file__).parents[1] / "runner" / "keeper.py")
# Runner names per evaluation mode; each runner's name is its mode. With a GPU, the compile-only runner compiles
# ahead, off the card, what the GPU runner will call (harness/measurer/ahead.py). Without one, what runs depends on the
# language (Language.without_gpu): one runner compiles for sm_90, and where the language has an interpreter another
# runs the kernels under it (Triton's must be switched on before Triton is first imported).
RUNNERS = {"gpu": ("gpu", "compile"), "cpu": ("compile", "interpret")}


def runners(mode: str, without_gpu: str = "interpret") -> tuple[str, ...]:
    """The runners an evaluation in this mode starts, for a language that can do `without_gpu` on a CPU."""
    if mode == "gpu" or without_gpu == "interpret":
        return RUNNERS[mode]
    return ("compile",) if without_gpu == "compile" else ()
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# The compile-only runner beside a GPU runner goes on while other evaluations are timed: at the lowest priority, so
# its candidate's host code cannot take the CPU from a measurer queueing a window (it would only make that window late).
COMPILE_AHEAD_NICE = 19
RUNNER_FILE_BYTES = 1 << 30  # the largest file a runner may write
MEMORY_POLL_S = 0.25  # how often an evaluation's memory is read from /proc (each read walks its processes and folders)


@dataclass
class ProcessesResult:
    messages: list = field(default_factory=list)
    timed_out: bool = False
    memory_killed: bool = False
    uninspectable: str | None = None  # why the evaluation's memory could not be counted (it was killed)
    over_device_share: str | None = None  # its runners held more than their share of the card (parent/device_share.py)
    tampered: str | None = None
    finished: bool = False
    seconds: float = 0.0
    runner_exit: dict = field(default_factory=dict)  # runner name -> returncode (None if still running when killed)
    stderr: dict = field(default_factory=dict)  # process name -> tail of its stderr
    memory_poll_s: float = 0.0  # this process's CPU time spent on the evaluation's memory reads
    memory_read_s: float = 0.0  # the reader processes' CPU time reading it from /proc (harness/parent/memory_reader.py)
    card_wait_s: float = 0.0  # seconds waited for another evolve process to let go of the card
    device_share_error: str | None = None  # the last read of the driver's table that failed

    def death(self, limit_s: float, max_rss_gb: float, runner: str | None = None) -> str:
        """One line on why the evaluation stopped before a verdict (runner: the one the measurer lost)."""
        if self.tampered:
            return f"the channel to the harness was tampered with ({self.tampered})"
        if self.timed_out:
            return f"timed out after {limit_s:g} s (process group killed)"
        if self.over_device_share:
            return self.over_device_share
        if self.memory_killed and self.uninspectable:
            return f"its memory could not be counted: {self.uninspectable} (killed)"
        if self.memory_killed:
            return (f"used more than {max_rss_gb:g} GB of host memory (killed; resident memory, open files and the "
                    f"files in its folders all count)")
        name = runner or next(iter(self.runner_exit), None)
        code = self.runner_exit.get(name)
        hint = _hint(self.stderr.get(name, ""))
        if code is not None and code < 0:
            signame = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return f"crashed: killed by signal {signame}{hint}"
        if code is not None:
            return f"the process exited (code {code}) before a verdict{hint}"
        return f"the measurer stopped before a verdict{_hint(self.stderr.get('measurer', ''))}"


def _hint(stderr_tail: str) -> str:
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error:" in line]
    chosen = errors[-1] if errors else (lines[-1] if lines else "")
    return f"; stderr: {chosen[:200]}" if chosen else ""


def _env(token: str, work: Path, extra: dict, gpu: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k)}
    env["EVOLVE_EVAL_TOKEN"] = token
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TMPDIR"] = str(work)
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    env.pop("TRITON_INTERPRET", None)
    if "expandable" in env.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        env.pop("PYTORCH_CUDA_ALLOC_CONF")  # CUDA IPC cannot export memory mapped that way
    # one device: the window times all work on it (gpu: the lane's card, as the parent names it)
    env["CUDA_VISIBLE_DEVICES"] = card_name(gpu, env)
    env.update(extra)
    return env


def _server_env(env: dict) -> dict:
    """The fork server's environment for a child's: the parent's, with what the imports read taken from the child's
    (no evaluation's token, folders or card)."""
    server = _env("", Path(tempfile.gettempdir()), {})
    del server["EVOLVE_EVAL_TOKEN"]
    for name in forkserver.IMPORT_TIME:
        if name in env:
            server[name] = env[name]
        else:
            server.pop(name, None)
    return server


def _wait(proc, seconds: float) -> None:
    if proc is not None:
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            pass


def _shm_folder() -> str:
    """Where the measurer puts the CPU runner's shared buffers: RAM-backed when /dev/shm is usable."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="evolve-shm-", dir=base)


class EvaluationProcesses:
    """One evaluation's processes, started ahead of the job: imports, CUDA contexts and the runner's jail are paid
    while the evaluation before runs. The wall-clock limit counts from the moment the job is sent."""

    def __init__(self, mode: str, trusted_cache: str, gpu: str | None = None, threads: int = 0, fork: bool = True,
                 language: str = DEFAULT_LANGUAGE):
        self.mode, self.gpu, self.fork, self.language = mode, gpu, fork, get_language(language)
        self.runners = runners(mode, self.language.without_gpu)
        self.work = Path(tempfile.mkdtemp(prefix="evolve-eval-"))
        self.shm = _shm_folder()
        self.key = secrets.token_bytes(32)
        self.token = secrets.token_hex(16)
        self.procs: dict[str, subprocess.Popen] = {}
        self._reaping: threading.Thread | None = None  # discard()'s
        # Started as root, the runners run as a user of this evaluation's own (harness/shared/privilege.py): their
        # folders are theirs, the evaluation's and the shared buffers' folders only passable (a runner lists and makes
        # nothing there); they live in a cgroup and namespaces of their own (harness/parent/isolation.py)
        self.isolation = isolation.here()
        self.runner_uid = self.isolation.users.lease()
        self.user = self.isolation.note(self.runner_uid)
        self.cgroup = self.isolation.cgroups.make()
        if self.runner_uid is not None:
            os.chmod(self.work, 0o711)
            os.chmod(self.shm, 0o711)
        self.outputs: dict[str, tuple] = {}  # process name -> (stdout, stderr): files only this process can name
        life_r, self._life_w = os.pipe()  # the children's lifeline (shared/lifeline.py): only this process writes
        common = {LIFELINE_ENV: str(life_r)}
        if threads > 0:  # evaluations sharing a host split its cores, rather than each spinning a thread on every one
            common.update({name: str(threads) for name in THREAD_VARIABLES})
        if self.runner_uid is not None:  # the keepers drop to it; the measurer gives it the shared buffers
            common[privilege.UID_ENV] = str(self.runner_uid)
        keeper = {NAMESPACES_ENV: ",".join(self.isolation.namespaces),
                  CGROUP_ENV: os.pathsep.join(self.cgroup.join_files()) if self.cgroup else ""}
        if self.isolation.users.read_any:
            keeper[privilege.READ_ANY_ENV] = "1"
        measurer_fds, links, close_after = [], [], []
        for name in self.runners:
            folder = self.work / name
            (folder / "tmp").mkdir(parents=True)
            if self.runner_uid is not None:
                for path in (folder, folder / "tmp"):
                    os.chown(path, self.runner_uid, self.runner_uid)
            to_runner_r, to_runner_w = os.pipe()
            from_runner_r, from_runner_w = os.pipe()
            extra = {**self.language.runner_env(name, folder),
                     "TMPDIR": str(folder / "tmp"), "XDG_CACHE_HOME": str(folder / "cache"),
                     "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), **common, **keeper}
            if name == "compile":
                extra["CUDA_VISIBLE_DEVICES"] = ""  # it compiles for a card it never sees (its jail holds the files)
            if name == "interpret":
                # the interpreter's tl.dot is numpy's matmul: BLAS threads spinning against the measurer's and the
                # other runner's work on a small machine made it several times slower
                extra["OPENBLAS_NUM_THREADS"] = extra["OMP_NUM_THREADS"] = "1"
            nice = COMPILE_AHEAD_NICE if mode == "gpu" and name == "compile" else 0
            self.procs[name] = self._start(  # under its keeper: everything it starts stays beneath that
                name, "runner", [to_runner_r, from_runner_w, name, folder, self.shm, self.language.name],
                (to_runner_r, from_runner_w, life_r), folder, _env(self.token, folder, extra, self.gpu),
                RUNNER_FILE_BYTES, nice)
            os.close(to_runner_r)
            os.close(from_runner_w)
            measurer_fds += [from_runner_r, to_runner_w]
            links.append(f"{name}:{from_runner_r}:{to_runner_w}:{self.procs[name].pid}")
            close_after += [from_runner_r, to_runner_w]
        job_r, self._job_w = os.pipe()
        self._msg_r, msg_w = os.pipe()
        grant_r, self._grant_w = os.pipe()  # the card's timing lease, granted by this process only (parent/lease.py)
        self.party = None
        # The measurer's own caches persist only where no runner can write them (with a jail).
        trusted = Path(trusted_cache) if jail.abi_version() else self.work
        extra = {"TRITON_CACHE_DIR": str(trusted / "triton-driver"),
                 "TORCHINDUCTOR_CACHE_DIR": str(trusted / "inductor"), **common}
        self.procs["measurer"] = self._start(
            "measurer", "measurer", [job_r, msg_w, mode, grant_r, *links],
            (job_r, msg_w, life_r, grant_r, *measurer_fds), self.work, _env(self.token, self.work, extra, self.gpu))
        for fd in (job_r, msg_w, life_r, grant_r, *close_after):
            os.close(fd)

    def _start(self, name: str, role: str, args: list, pass_fds: tuple, cwd: Path, env: dict,
               file_bytes: int | None = None, nice: int = 0):
        """A measurer, or a runner under its keeper: forked from the fork server for its settings where one runs
        (harness/parent/forkserver.py), else started as an interpreter of its own."""
        out, err = self._output(name)
        server = forkserver.SERVERS.get(env, lambda: _server_env(env)) if self.fork else None
        if server is not None:
            try:
                return server.spawn(role, args, env, cwd, pass_fds, out, err, file_bytes, nice)
            except forkserver.ServerUnavailable:
                pass
        argv = ([sys.executable, "-S", KEEPER, sys.executable, "-m", "evolve.harness.runner.runner"] if role == "runner"
                else [sys.executable, "-m", "evolve.harness.measurer.measurer"])
        return subprocess.Popen([*argv, *(str(a) for a in args)], pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, cwd=cwd, env=env, start_new_session=True,
                                preexec_fn=lambda: forkserver.limit(file_bytes, nice))

    def _output(self, name: str) -> tuple:
        """The process's stdout and stderr: unlinked files in the evaluation's folder (which no runner can write), held
        by this process, so reading them back never opens a path a runner could have put something at."""
        files = (tempfile.TemporaryFile(dir=self.work), tempfile.TemporaryFile(dir=self.work))
        self.outputs[name] = files
        return files

    def stderr_tail(self, name: str, limit: int = 4000) -> str:
        """The last `limit` bytes a process wrote to its stderr (bounded: a runner can make it any size)."""
        if name not in self.outputs:
            return ""
        fd = self.outputs[name][1].fileno()
        try:
            size = os.fstat(fd).st_size
            return os.pread(fd, limit, max(0, size - limit)).decode(errors="replace")
        except OSError:
            return ""

    def _watch_memory(self, runners: list, max_rss_gb: float, result: ProcessesResult) -> bool:
        """Whether the evaluation is over its memory limit now (then marked killed); the time spent reading it noted."""
        polled = time.thread_time()
        over = self._over_memory(runners, max_rss_gb, result)
        result.memory_poll_s += time.thread_time() - polled
        result.memory_killed = result.memory_killed or over
        return over

    def _over_memory(self, runners: list, max_rss_gb: float, result: ProcessesResult) -> bool:
        """Whether the runners' trees hold more than the limit: resident memory, nameless open files, and the bytes
        in their folders and the shared buffers' folder (RAM where it is /dev/shm)."""
        folders = [self.work / name for name in self.runners] + [Path(self.shm)]
        try:
            counted, read_s = memory_reader.evaluation_bytes(runners, folders, MEMORY_POLL_S)
            result.memory_read_s += read_s
            return counted > max_rss_gb * 2**30
        except processes.Uninspectable as exc:
            result.uninspectable = str(exc)
            return True

    def _over_device_share(self, share, runners: list, result: ProcessesResult) -> bool:
        """Whether the runners hold more than their share of the card now (then the reason is kept)."""
        polled = time.thread_time()
        counted = set(self.cgroup.pids() if self.cgroup is not None else ()) or \
            processes.tree(runners, processes.recent_parents(MEMORY_POLL_S))
        try:
            result.over_device_share = share.check(counted | set(runners), {self.procs["measurer"].pid})
        except OSError as exc:  # the driver's table could not be read this time: the next poll tries again
            result.device_share_error = str(exc)[:300]
        result.memory_poll_s += time.thread_time() - polled
        return result.over_device_share is not None

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs.values())

    def compiled_cache(self) -> Path:
        """The first runner's own cache of compiled kernels (private to this evaluation)."""
        return self.work / self.runners[0] / self.language.cache_folder

    def compiled_caches(self) -> list:
        """The compiled-kernel caches of the runners that compile (not the interpreter's)."""
        return [self.work / name / self.language.cache_folder for name in self.runners if name != "interpret"]

    def candidate_path(self) -> Path:
        """Where the candidate file goes: inside the first runner's folder (the measurer never reads it)."""
        return self.work / self.runners[0] / "candidate.py"

    def kill(self) -> None:
        """Every process of the evaluation: the keepers' trees first (whatever session or environment a process has),
        then the groups and any process still carrying the token."""
        pids = [p.pid for p in self.procs.values()]
        if self.cgroup is not None:
            self.cgroup.kill()
        processes.kill_tree(pids)
        kill_everything(pids, self.token)

    def discard(self) -> None:
        """Kill every process and drop the folders. Killed processes are reaped in a thread of their own: one that
        held a CUDA context can take seconds to let go, and nothing of it runs meanwhile."""
        self.kill()
        for fd in (self._job_w, self._msg_r, self._life_w, self._grant_w):  # only those run() did not take over
            if fd is not None:  # (closing a number twice could close a descriptor another thread has opened since)
                os.close(fd)
        self._job_w = self._msg_r = self._life_w = self._grant_w = None
        for files in self.outputs.values():
            for f in files:
                f.close()
        procs, folders = list(self.procs.values()), (self.work, Path(self.shm))
        group, users, uid = self.cgroup, self.isolation.users, self.runner_uid

        def reap():
            for proc in procs:
                proc.wait()
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)
            if group is not None:
                group.remove()
            users.release(uid)  # its processes are gone: another evaluation may have the user

        self._reaping = threading.Thread(target=reap, name="evolve-reap")  # not a daemon: exit waits for the folders
        self._reaping.start()

    def wait_gone(self, seconds: float) -> None:
        """Until every process of the evaluation has ended and been reaped, and its cgroup is gone (at most
        `seconds`): what they held (memory on the host and the card) is then free."""
        self.kill()
        deadline = time.monotonic() + seconds
        if self._reaping is not None:
            self._reaping.join(seconds)
            return
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
            except subprocess.TimeoutExpired:
                return

    def run(self, job: dict, timeout_s: float, max_rss_gb: float, on_message=None,
            device_share=None) -> ProcessesResult:
        """Send the job; collect checked messages until 'done', death, the time limit or a memory limit (the host's,
        max_rss_gb; the card's, device_share: harness/parent/device_share.py)."""
        from .lease import card_lock

        job = {**job, "key": self.key.hex(), "shm": self.shm}
        result = ProcessesResult()
        if self.cgroup is not None and max_rss_gb:
            self.cgroup.limit_memory(int(max_rss_gb * 2**30))
        hold = card_lock(self.mode, self.gpu)
        result.card_wait_s = hold.acquire()  # another evolve process on this card: wait (the limit counts from here)
        try:
            return self._run(job, result, timeout_s, max_rss_gb, on_message, device_share)
        finally:
            hold.release()

    def _run(self, job: dict, result: ProcessesResult, timeout_s: float, max_rss_gb: float, on_message,
             device_share) -> ProcessesResult:
        from .lease import LeaseSide, card_lease

        started = time.monotonic()
        lease = card_lease((self.mode, self.gpu))
        party = self.party = LeaseSide(self.work.name, [p.pid for p in self.procs.values()], self.token, self._grant_w)
        party.kill = self.kill
        lease.join(party)
        job_w, msg_r, self._job_w, self._msg_r = self._job_w, self._msg_r, None, None
        try:
            with os.fdopen(job_w, "wb") as pipe:
                pipe.write(json.dumps(job).encode())
        except BrokenPipeError:
            pass  # the measurer died during start-up; its exit status tells why
        runners = [p.pid for name, p in self.procs.items() if name != "measurer"]
        buffer, next_poll = b"", 0.0
        try:
            with os.fdopen(msg_r, "rb", buffering=0) as channel:
                while True:
                    left = timeout_s - (time.monotonic() - started - party.stopped_so_far())  # stopped time is not its
                    if left <= 0:
                        result.timed_out = True
                        break
                    ready, _, _ = select.select([channel], [], [], min(left, max(0.0, next_poll - time.monotonic())))
                    if (max_rss_gb or device_share) and time.monotonic() >= next_poll:  # not every message
                        next_poll = time.monotonic() + MEMORY_POLL_S
                        if max_rss_gb and self._watch_memory(runners, max_rss_gb, result):
                            break
                        if device_share and self._over_device_share(device_share, runners, result):
                            break
                    if not ready:
                        continue
                    chunk = channel.read(1 << 16)
                    if not chunk:
                        break
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        message = _verify(line, self.key)
                        if isinstance(message, str):
                            result.tampered = message
                            break
                        if message["kind"] == "done":
                            result.finished = True
                        if message["kind"] == "runner_lost":
                            _wait(self.procs.get(message["runner"]), 2.0)  # let its exit status settle
                        if message["kind"] == "lease":
                            acts = {"take": lease.request, "give": lease.release, "evict": lease.evict}
                            if message["act"] in acts:
                                acts[message["act"]](party)
                            elif message["act"] == "offcard" and "compile" in self.procs:
                                lease.offcard(party, self.procs["compile"].pid)
                        result.messages.append(message)
                        if on_message:
                            on_message(message)
                    if result.tampered or result.finished:
                        break
        finally:
            lease.leave(party)
            # Once the verdict is in, nothing the processes do is needed: kill them rather than wait for their
            # teardown, and reap them in the background (a killed CUDA process can take seconds to let go).
            for name, proc in self.procs.items():
                if name != "measurer":
                    result.runner_exit[name] = proc.poll()
            if self.cgroup is not None and self.cgroup.oom_kills():  # the kernel's limit on the cgroup acted
                result.memory_killed = True
            self.kill()
            if result.finished:
                for proc in self.procs.values():
                    threading.Thread(target=proc.wait, daemon=True, name="evolve-reap").start()
            else:
                for proc in self.procs.values():
                    proc.wait()
            result.seconds = time.monotonic() - started
            for name in self.procs:
                result.stderr[name] = self.stderr_tail(name)
        return result


class StartedAhead:
    """Crews started ahead of need, up to a number per (mode, trusted cache folder, GPU, language); all killed at
    interpreter exit. Lanes on several GPUs, and evaluations sharing a card, take and prepare their own from threads of
    their own."""

    def __init__(self):
        self._ready: dict[tuple, list] = {}  # key -> crews ready, and None for each being started
        self._lock = threading.Lock()
        atexit.register(self.clear)

    def take(self, mode: str, trusted_cache: str, gpu: str | None = None, threads: int = 0,
             fork: bool = True, language: str = DEFAULT_LANGUAGE) -> EvaluationProcesses:
        key = (mode, trusted_cache, gpu, threads, fork, language)
        with self._lock:
            ready = self._ready.get(key, [])
            crew = next((c for c in ready if c is not None), None)
            if crew is not None:
                ready.remove(crew)
        if crew is not None and crew.alive():
            return crew
        if crew is not None:
            crew.discard()
        return EvaluationProcesses(mode, trusted_cache, gpu, threads, fork, language)

    def prepare(self, mode: str, trusted_cache: str, gpu: str | None = None, count: int = 1,
                threads: int = 0, fork: bool = True, language: str = DEFAULT_LANGUAGE) -> None:
        """Start crews until `count` are ready or starting for this key."""
        key = (mode, trusted_cache, gpu, threads, fork, language)
        while True:
            with self._lock:
                ready = self._ready.setdefault(key, [])
                if len(ready) >= count:
                    return
                ready.append(None)  # claimed: start it outside the lock
            crew = EvaluationProcesses(mode, trusted_cache, gpu, threads, fork, language)
            with self._lock:
                ready = self._ready.setdefault(key, [])
                if None in ready:
                    ready[ready.index(None)] = crew
                    continue
            crew.discard()  # dropped while it started
            return

    def drop(self, gpu: str | None = None) -> None:
        """Discard the crews started ahead for one card (after it faulted, they may hold a broken context)."""
        with self._lock:
            crews = []
            for key in [k for k in self._ready if k[2] == gpu]:
                crews += [c for c in self._ready.pop(key) if c is not None]
        for crew in crews:
            crew.discard()

    def clear(self) -> None:
        with self._lock:
            crews = [c for ready in self._ready.values() for c in ready if c is not None]
            self._ready = {}
        for crew in crews:
            crew.discard()


STARTED_AHEAD = StartedAhead()


def _verify(line: bytes, key: bytes):
    """The message if its signature and schema hold, else a one-line reason (a string)."""
    mac, _, payload = line.partition(b" ")
    expected = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(mac, expected):
        return "a message failed its signature check"
    try:
        return parse(payload, MEASURER)
    except Malformed as exc:
        return f"a malformed message: {exc}"
