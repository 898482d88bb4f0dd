"""Runners started by root give up root before anything of theirs runs (harness/shared/privilege.py,
harness/runner/keeper.py).

The keeper's drop is tested with the system's interpreter (which nobody may run even where the project's venv lies
under /root); a whole evaluation as nobody runs only where this interpreter is one nobody may run too.
"""
import os
import shutil
import subprocess
import sys

import pytest

from evolve.harness.runner import keeper
from evolve.harness.runner.keeper import DROP_FAILED
from evolve.harness.shared import privilege

KEEPER = os.path.join(os.path.dirname(keeper.__file__), "keeper.py")
needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root gives up root")


def _runnable_by_nobody() -> str | None:
    """An interpreter uid 65534 can start, or None."""
    for candidate in (shutil.which("python3", path="/usr/bin:/usr/local/bin"), sys.executable):
        if candidate and subprocess.run([candidate, "-S", "-c", "pass"], user=privilege.UNPRIVILEGED,
                                        group=privilege.UNPRIVILEGED, extra_groups=[],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


def _root_only(tmp_path):
    secret = tmp_path / "root-only.txt"
    secret.write_text("root's")
    os.chmod(secret, 0o600)
    return secret


@needs_root
def test_the_keeper_gives_up_root_before_its_runner_starts(tmp_path):
    """Named a user, the keeper's child drops every id and group before the runner's interpreter starts: the runner
    cannot read a file only root may, and cannot take root back."""
    python = _runnable_by_nobody()
    if python is None:
        pytest.skip("no interpreter here that uid 65534 may run")
    secret = _root_only(tmp_path)
    script = ("import os, sys\n"
              "print(os.getresuid(), os.getresgid(), os.getgroups())\n"
              "try:\n    os.setuid(0)\nexcept OSError:\n    print('root refused')\n"
              "try:\n    open(sys.argv[1]).read()\nexcept PermissionError:\n    print('secret refused')\n")
    env = {**os.environ, privilege.UID_ENV: str(privilege.UNPRIVILEGED)}
    done = subprocess.run([sys.executable, "-S", KEEPER, python, "-S", "-c", script, str(secret)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "(65534, 65534, 65534) (65534, 65534, 65534) []"
    assert lines[1:] == ["root refused", "secret refused"]


@needs_root
def test_a_keeper_that_cannot_drop_starts_no_runner(tmp_path):
    """A user the ids cannot be set to (out of range): the runner never starts, and the keeper says why."""
    env = {**os.environ, privilege.UID_ENV: str(1 << 40)}
    done = subprocess.run([sys.executable, "-S", KEEPER, sys.executable, "-S", "-c", "print('ran')"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == DROP_FAILED
    assert "ran" not in done.stdout
    assert "root could not be given up" in done.stderr


@needs_root
def test_the_probe_names_what_nobody_cannot_read(tmp_path, monkeypatch):
    """Where a runner could not start as nobody, runners keep root and the reason names the path."""
    python = _runnable_by_nobody()
    if python is None:
        pytest.skip("no interpreter here that uid 65534 may run")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    monkeypatch.setattr(privilege, "needed_paths", lambda: [str(closed)])
    assert privilege.probe(python=python) == f"uid 65534 cannot read {closed}"
    monkeypatch.setattr(privilege, "needed_paths", lambda: ["/"])
    assert privilege.probe(python=python) is None


@needs_root
@pytest.mark.skipif(not privilege.runner_users().drop_root or privilege.runner_users().read_any,
                    reason="this interpreter is one a runner's user may not read: runners read any file here "
                           "(CAP_DAC_READ_SEARCH), and verdicts say so")
def test_an_evaluation_started_by_root_runs_its_candidate_as_nobody(tmp_path):
    """The whole ladder with runners as nobody: a candidate that reads a file only root may fails at import, and
    the verdict says whom the runners ran as."""
    from test_trust import MINI, candidate

    from evolve.harness import EvalOptions, evaluate

    secret = _root_only(tmp_path)
    path = candidate(tmp_path, f'''
        SECRET = open({str(secret)!r}).read()

        def custom_kernel(x):
            return launch(x)
    ''')
    verdict = evaluate(path, MINI, EvalOptions(cache_dir=str(tmp_path / "cache"), timeout_s=120,
                                               static_check=False))
    load = verdict.rungs[0]
    assert load.name == "load" and load.failed and "PermissionError" in load.reason, verdict.rungs
    assert f"runs as uid {privilege.UID_FIRST}" in verdict.jail and "a user of this evaluation's own" in verdict.jail
