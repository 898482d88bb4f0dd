"""A stopped evolve leaves nothing running: Ctrl-C stops `eval` and `run` within seconds (exit 130), SIGTERM stops
them the same way (exit 143), and the evaluation's processes die with the parent whatever kills it (SIGKILL too)."""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HANG = ROOT / "tests" / "adversarial" / "cases" / "hang_kernel.py"
PROBLEM = ROOT / "tests" / "adversarial" / "problem"


def _under(folder: Path) -> list[int]:
    """Processes whose working folder lies under `folder` (an evaluation's measurer and runners)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(folder) in os.readlink(entry / "cwd"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _start(args, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the evaluation's folders, and so its processes, land here
    proc = subprocess.Popen([sys.executable, "-m", "evolve.cli", *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 90
    while len(_under(tmp_path)) < 2:  # the measurer and at least one runner
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the evaluation's processes never started"
        time.sleep(0.2)
    time.sleep(3)  # well into the evaluation: the runners are importing, compiling or hanging in the kernel
    return proc


def _gone_within(tmp_path, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _under(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _hanging_run(tmp_path) -> tuple:
    """(the problem folder, the archive) of a run whose one seed hangs in its kernel, and the run, started."""
    problem = tmp_path / "problem"
    shutil.copytree(PROBLEM, problem)
    (problem / "seeds").mkdir()
    shutil.copy(HANG, problem / "seeds" / "hang.py")
    db = tmp_path / "runs.db"
    proc = _start(["run", str(problem), "--db", str(db), "--device", "cpu", "--timeout", "600",
                   "--cache-dir", str(tmp_path / "cache")], tmp_path)
    return problem, db, proc


def _status(db, tmp_path) -> str:
    done = subprocess.run([sys.executable, "-m", "evolve.cli", "status", "--db", str(db)], capture_output=True,
                          text=True, cwd=tmp_path)
    return done.stdout + done.stderr


def _eval_args(tmp_path):
    return ["eval", str(HANG), str(PROBLEM), "--device", "cpu", "--timeout", "600",
            "--cache-dir", str(tmp_path / "cache")]


def test_ctrl_c_stops_eval_within_seconds(tmp_path):
    proc = _start(_eval_args(tmp_path), tmp_path)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 5  # 10-13 s when each fork server's close waited 5 s for it to see its socket end
    assert proc.returncode == 130 and b"interrupted" in err
    assert _gone_within(tmp_path, 10) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_evaluation_dies_with_its_parent(tmp_path, sig):
    proc = _start(_eval_args(tmp_path), tmp_path)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    assert _gone_within(tmp_path, 15) == []


def test_ctrl_c_stops_a_run_and_records_it(tmp_path):
    problem, db, proc = _hanging_run(tmp_path)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 20, err
    assert proc.returncode == 130, (out, err)
    assert b"interrupted" in out + err
    assert _gone_within(tmp_path, 10) == []
    assert "interrupted" in _status(db, tmp_path)

    # Resumed, the run is running again (the hanging candidate it left in flight is evaluated again): status says
    # so, and a second run on the same archive is refused rather than sharing it.
    proc = _start(["run", str(problem), "--db", str(db), "--device", "cpu", "--timeout", "600", "--resume",
                   "--cache-dir", str(tmp_path / "cache")], tmp_path)
    try:
        status = subprocess.run([sys.executable, "-m", "evolve.cli", "status", "--db", str(db)],
                                capture_output=True, text=True, cwd=tmp_path)
        assert f"running (pid {proc.pid})" in status.stdout and "interrupted" not in status.stdout, status.stdout
        second = subprocess.run([sys.executable, "-m", "evolve.cli", "run", str(problem), "--db", str(db),
                                 "--device", "cpu"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert second.returncode == 2 and "is in use by a running evolve (pid" in second.stderr, second.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"since it was resumed" in out, (out, err)


def test_sigterm_stops_a_run_as_ctrl_c_does_and_exits_143(tmp_path):
    """A service manager, a job scheduler or `timeout` sends SIGTERM: the run is closed in the archive (not left
    "running" for --resume to find), its evaluation's processes go, and the exit status says which signal."""
    _, db, proc = _hanging_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    assert _gone_within(tmp_path, 10) == []
    assert "interrupted (SIGTERM)" in _status(db, tmp_path)


def test_a_second_signal_does_not_cut_the_stop_short(tmp_path):
    """Ctrl-C, then SIGTERM a moment later (`timeout` after a script forwarded its own stop, a service manager after
    an impatient user): the first one's stop runs to its end. A second signal raised inside a lock's release had
    left that lock broken and the run closed as a crash of evolve's own."""
    _, db, proc = _hanging_run(tmp_path)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert not list(tmp_path.glob("evolve-crash-*")) and _gone_within(tmp_path, 10) == []
    assert "interrupted (Ctrl-C)" in _status(db, tmp_path)


def test_a_run_without_a_gpu_says_how_long_it_will_take(tmp_path):
    """No limit given and no GPU: the run says up front that it stops after the default 5 minutes."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "evolve.cli", "run", str(PROBLEM), "--db", str(tmp_path / "r.db"),
                             "--device", "cpu", "--cache-dir", str(tmp_path / "cache")], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("The run stops" in line for line in lines):
            lines.append(proc.stderr.readline())
        said = next(line for line in lines if "The run stops" in line)
        assert "after 5 min (the default without a GPU; --budget changes it)" in said
        assert "run under the Triton interpreter" in said
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert _gone_within(tmp_path, 10) == []
