"""Running one child evaluation: its own process group, limits, a signed channel, and a kill that leaves nothing.

The child gets the job on a pipe only the parent writes and answers on a pipe of its own; its stdout and stderr go to
files that are read only for diagnostics. At the wall-clock limit, or when its memory passes the limit, the whole
process group is killed, and then every process that still carries this evaluation's token in its environment (one
that started a new session to escape the group kill, say) is killed too.
"""
from __future__ import annotations

import atexit
import hashlib
import hmac
import json
import os
import re
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

SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ChildResult:
    messages: list = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    memory_killed: bool = False
    tampered: str | None = None
    finished: bool = False
    seconds: float = 0.0
    stderr_tail: str = ""

    def death(self, limit_s: float, max_rss_gb: float) -> str:
        """One line on why the child stopped before a verdict."""
        if self.tampered:
            return f"the channel to the harness was tampered with ({self.tampered})"
        if self.timed_out:
            return f"timed out after {limit_s:g} s (process group killed)"
        if self.memory_killed:
            return f"used more than {max_rss_gb:g} GB of host memory (killed)"
        code = self.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            return f"crashed: killed by signal {name}{self._hint()}"
        return f"the process exited (code {code}) before a verdict{self._hint()}"

    def _hint(self) -> str:
        lines = [line.strip() for line in self.stderr_tail.splitlines() if line.strip()]
        errors = [line for line in lines if "Error" in line or "error:" in line]
        chosen = errors[-1] if errors else (lines[-1] if lines else "")
        return f"; stderr: {chosen[:200]}" if chosen else ""


def _child_env(token: str, mode: str, work: Path, triton_cache: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not SECRET_ENV.search(k)}
    env["EVOLVE_EVAL_TOKEN"] = token
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TRITON_CACHE_DIR"] = triton_cache or str(work / "triton-cache")
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    if mode == "interpret":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    if mode == "gpu":  # one device per evaluation: work on another GPU would escape the harness's events and syncs
        visible = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
        env["CUDA_VISIBLE_DEVICES"] = visible[0] if visible else "0"
    return env


def _limits(file_bytes: int):
    def apply():
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))

    return apply


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _group_rss(pgid: int) -> int:
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    total += _rss_bytes(int(entry.name))
            except (ProcessLookupError, PermissionError):
                continue
    return total


def kill_everything(pgid: int, token: str) -> None:
    """SIGKILL the group, then any process whose environment still carries the evaluation's token."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    needle = f"EVOLVE_EVAL_TOKEN={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


class Child:
    """One started child: it imports torch and Triton and sets up the device, then waits for its job.

    Starting it ahead of time (a spare) hides that start-up behind the evaluation before; the wall-clock limit counts
    from the moment the job is sent."""

    def __init__(self, mode: str, triton_cache: str | None):
        self.mode = mode
        self.work = Path(tempfile.mkdtemp(prefix="evolve-eval-"))
        self.key = secrets.token_bytes(32)
        self.token = secrets.token_hex(16)
        job_r, self._job_w = os.pipe()
        self._msg_r, msg_w = os.pipe()
        self.err_path = self.work / f"{mode}.stderr"
        with open(self.work / f"{mode}.stdout", "wb") as out_file, open(self.err_path, "wb") as err_file:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "evolve.harness.child", str(job_r), str(msg_w), mode],
                pass_fds=(job_r, msg_w), stdin=subprocess.DEVNULL, stdout=out_file, stderr=err_file, cwd=self.work,
                env=_child_env(self.token, mode, self.work, triton_cache), start_new_session=True,
                preexec_fn=_limits(1 << 30),
            )
        os.close(job_r)
        os.close(msg_w)

    def discard(self) -> None:
        kill_everything(self.proc.pid, self.token)
        self.proc.wait()
        for fd in (self._job_w, self._msg_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.work, ignore_errors=True)

    def run(self, job: dict, timeout_s: float, max_rss_gb: float, on_message=None) -> ChildResult:
        """Send the job; collect verified messages until 'done', death, the time limit or the memory limit."""
        key, proc = self.key, self.proc
        job = {**job, "key": key.hex(), "work": str(self.work)}
        result = ChildResult()
        started = time.monotonic()
        try:
            with os.fdopen(self._job_w, "wb") as pipe:
                pipe.write(json.dumps(job).encode())
        except BrokenPipeError:
            pass  # the child died during start-up; its exit status tells why
        buffer = b""
        try:
            with os.fdopen(self._msg_r, "rb", buffering=0) as channel:
                while True:
                    left = timeout_s - (time.monotonic() - started)
                    if left <= 0:
                        result.timed_out = True
                        break
                    ready, _, _ = select.select([channel], [], [], min(left, 0.25))
                    if max_rss_gb and _group_rss(proc.pid) > max_rss_gb * 2**30:
                        result.memory_killed = True
                        break
                    if not ready:
                        continue
                    chunk = channel.read(1 << 16)
                    if not chunk:
                        break
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        message = _verify(line, key)
                        if message is None:
                            result.tampered = "a message failed its signature check"
                            break
                        if message.get("kind") == "done":
                            result.finished = True
                        result.messages.append(message)
                        if on_message:
                            on_message(message)
                    if result.tampered or result.finished:
                        break
        finally:
            # Once the verdict is in, nothing the child does is needed: kill it rather than wait for its teardown,
            # and reap it in the background (a killed CUDA process can take seconds to release its context).
            kill_everything(proc.pid, self.token)
            if result.finished:
                threading.Thread(target=proc.wait, daemon=True, name="evolve-reap").start()
            else:
                result.returncode = proc.wait()
            result.seconds = time.monotonic() - started
            try:
                result.stderr_tail = self.err_path.read_bytes()[-4000:].decode(errors="replace")
            except OSError:
                pass
        return result


class Spares:
    """Children started ahead of need, one per (mode, Triton cache); all killed at interpreter exit."""

    def __init__(self):
        self._ready: dict[tuple, Child] = {}
        atexit.register(self.clear)

    def take(self, mode: str, triton_cache: str | None) -> Child:
        child = self._ready.pop((mode, triton_cache), None)
        if child is not None and child.proc.poll() is None:
            return child
        if child is not None:
            child.discard()
        return Child(mode, triton_cache)

    def prepare(self, mode: str, triton_cache: str | None) -> None:
        if (mode, triton_cache) not in self._ready:
            self._ready[(mode, triton_cache)] = Child(mode, triton_cache)

    def clear(self) -> None:
        for child in self._ready.values():
            child.discard()
        self._ready.clear()


SPARES = Spares()


def _verify(line: bytes, key: bytes) -> dict | None:
    mac, _, payload = line.partition(b" ")
    expected = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None
