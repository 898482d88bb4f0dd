"""The static check in a process of its own: the parent asks, a jailed child imports and judges, the parent reads.

The check resolves every dotted name a candidate writes to the object it names, importing the submodules of the
allowed packages the file names (static_check._Library). That runs library code chosen by the candidate, so it never
runs in the parent: each check is a child (harness/static_check_process.py) forked from the fork server (torch and the languages imported, the same
modules loaded for every check) or, where none runs, an interpreter of its own. The child jails itself before it reads
the request (Landlock: it may write only in a folder of its own, deleted with it, may trace or signal nothing outside
and open no TCP connection), runs as the runners' user, and writes one line of JSON. It is killed, with anything it
started, when it answers or after CHECK_LIMIT_S; a child that says nothing usable has the file refused, never passed.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

CHECK_LIMIT_S = 180.0  # a cold import of a large package on a loaded machine
MAX_ANSWER = 1 << 20
ANSWER_FILE_BYTES = 1 << 22  # the most it may write: its answer and a traceback


def check_file(path, forbid_calls=(), forbid_modules=(), allow_modules=(), language: str | None = None,
               entry: str | None = None, fork: bool = True) -> list[str]:
    """The file's violations, as static_check.screen gives them, judged in a checker process."""
    from . import forkserver, lifeline, privilege, processes
    from .sandbox import _env, _server_env

    try:
        source = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        return [f"cannot read the candidate: {exc}"]
    request = {"source": source, "filename": str(path), "forbid_calls": list(forbid_calls),
               "forbid_modules": list(forbid_modules), "allow_modules": list(allow_modules), "language": language,
               "entry": entry}
    token = secrets.token_hex(16)
    folder = tempfile.mkdtemp(prefix="evolve-check-")
    extra = {"CUDA_VISIBLE_DEVICES": ""}  # it never needs a card
    users = privilege.runner_users()
    uid = users.lease()
    if uid is not None:
        extra[privilege.UID_ENV] = str(uid)
        os.chown(folder, uid, uid)
        if users.read_any:
            extra[privilege.READ_ANY_ENV] = "1"
    env = _env(token, folder, extra)
    said = os.memfd_create("evolve-check")
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = None
    try:
        os.write(said, json.dumps(request).encode())
        os.lseek(said, 0, os.SEEK_SET)
        server = forkserver.SERVERS.get(env, lambda: _server_env(env)) if fork else None
        if server is not None:
            try:
                proc = server.spawn("checker", [said], env, folder, (said,), out, err, ANSWER_FILE_BYTES)
            except forkserver.Gone:
                proc = None
        if proc is None:
            proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.static_check_process", str(said)],
                                    pass_fds=(said,), stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=folder,
                                    env=env, start_new_session=True,
                                    preexec_fn=lambda: forkserver.limit(ANSWER_FILE_BYTES))
        code = _wait(proc, CHECK_LIMIT_S)
    finally:
        os.close(said)
        if proc is not None:
            processes.kill_tree([proc.pid])
            lifeline.kill_everything([proc.pid], token)
            if hasattr(proc, "wait"):
                proc.wait()
        users.release(uid)
        _remove(folder)
    return _answer(out, err, code)


def _wait(proc, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            return code
        time.sleep(0.01)
    return None


def _answer(out, err, code) -> list[str]:
    """The child's problems, or one reason why its answer is none (the file is refused)."""
    with out, err:
        out.seek(0)
        text = out.read(MAX_ANSWER).decode(errors="replace")
        err.seek(max(err.seek(0, os.SEEK_END) - 2000, 0))
        tail = err.read().decode(errors="replace").strip().splitlines()
    if code is None:
        return [f"the static check did not finish within {CHECK_LIMIT_S:g} s (a module the file names takes that "
                f"long to import)"]
    try:
        answer = json.loads(text.strip().splitlines()[-1])
        problems = answer["problems"]
        if code == 0 and isinstance(problems, list) and all(isinstance(p, str) for p in problems):
            return problems
    except (ValueError, IndexError, KeyError, TypeError):
        pass
    why = tail[-1][:300] if tail else f"exit status {code}"
    return [f"the static check could not judge the file ({why})"]


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
