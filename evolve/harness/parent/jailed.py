"""Work that runs code the parent must not run, in a process of its own: the parent asks, a jailed child does the work
and answers in one line of JSON, the parent reads.

The work that goes there (runner/jailed_child.py: WORK): the static check, which resolves every dotted name a candidate
writes by importing the submodules of the allowed packages the file names (library code the candidate chose); making one
case of a problem's inputs with no candidate loaded, which decides whether a generator's failure inside an evaluation
was the problem's or the candidate's doing; and running a problem's own functions before an evaluation and in
check-problem (a foreign problem's are code from anywhere). Each is a child forked from the fork server
(torch and the languages imported, the same modules loaded every time) or, where none runs, an interpreter of its own.
The child jails itself before it reads anything it is asked about (Landlock: it may write only in a folder of its own,
deleted with it, may trace or signal nothing outside and open no TCP connection), runs as a runner user leased for it
(the static check's), and sees the one card it is given or none. It is killed, with anything it started, when it
answers or at its time limit; a child that says nothing usable is an answer with an "error", never a pass.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

MAX_ANSWER = 1 << 20
ANSWER_FILE_BYTES = 1 << 22  # the most it may write: its answer and a traceback


def ask(work: str, request: dict, limit_s: float, card: bool = False, gpu: str | None = None, fork: bool = True,
        runner_user: bool = True) -> dict:
    """The child's answer to `request` for `work` (a name in jailed_child.WORK); {"error": why} where it gave none.
    card: whether it may use a card, gpu: which (as evaluations name it; None: the default one). runner_user: whether
    it runs as a user of its own (the static check); the problem's own code runs as the measurer that runs it in
    evaluations does, since it reads the problem's folder."""
    from ..shared import lifeline, privilege, processes
    from . import forkserver
    from .sandbox import _env, _server_env

    token = secrets.token_hex(16)
    folder = tempfile.mkdtemp(prefix="evolve-jailed-")
    extra = {} if card else {"CUDA_VISIBLE_DEVICES": ""}
    users = privilege.runner_users()
    uid = users.lease() if runner_user else None
    if uid is not None:
        extra[privilege.UID_ENV] = str(uid)
        os.chown(folder, uid, uid)
        if users.read_any:
            extra[privilege.READ_ANY_ENV] = "1"
    env = _env(token, folder, extra, gpu)
    said = os.memfd_create("evolve-request")
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    proc = None
    try:
        os.write(said, json.dumps({"work": work, "gpu": card, **request}).encode())
        os.lseek(said, 0, os.SEEK_SET)
        server = forkserver.SERVERS.get(env, lambda: _server_env(env)) if fork else None
        if server is not None:
            try:
                proc = server.spawn("jailed", [said], env, folder, (said,), out, err, ANSWER_FILE_BYTES)
            except forkserver.ServerUnavailable:
                proc = None
        if proc is None:
            proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.runner.jailed_child", str(said)],
                                    pass_fds=(said,), stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=folder,
                                    env=env, start_new_session=True,
                                    preexec_fn=lambda: forkserver.limit(ANSWER_FILE_BYTES))
        code = _wait(proc, limit_s)
    finally:
        os.close(said)
        if proc is not None:
            processes.kill_tree([proc.pid])
            lifeline.kill_everything([proc.pid], token)
            if hasattr(proc, "wait"):
                proc.wait()
        users.release(uid)
        shutil.rmtree(folder, ignore_errors=True)
    return _answer(out, err, code, limit_s)


def _wait(proc, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            return code
        time.sleep(0.01)
    return None


def _answer(out, err, code, limit_s: float) -> dict:
    """The child's last line of JSON where it ended well, else {"error": the reason, "timed_out": bool}."""
    with out, err:
        out.seek(0)
        text = out.read(MAX_ANSWER).decode(errors="replace")
        err.seek(max(err.seek(0, os.SEEK_END) - 2000, 0))
        tail = err.read().decode(errors="replace").strip().splitlines()
    if code is None:
        return {"error": f"it did not finish within {limit_s:g} s", "timed_out": True}
    try:
        answer = json.loads(text.strip().splitlines()[-1])
        if code == 0 and isinstance(answer, dict) and "error" not in answer:
            return answer
    except (ValueError, IndexError):
        pass
    return {"error": tail[-1][:300] if tail else f"exit status {code}", "timed_out": False}
