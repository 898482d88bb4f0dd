"""A candidate owns its whole process: what it leaves behind is never acted on, outlives nothing, and is counted.

Each candidate runs with the static check off (builtins reached through a library object, as in test_trust.py), on
the small softmax of tests/data, so each evaluation takes seconds on a CPU.
"""
import os
import time
from pathlib import Path

import pytest
from test_trust import MINI, candidate, needs_landlock

from evolve.harness import EvalOptions, evaluate


@pytest.fixture
def opts(tmp_path):
    return EvalOptions(cache_dir=str(tmp_path / "cache"), timeout_s=120, static_check=False)


def _with_marker(marker: str) -> list:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@needs_landlock
def test_nothing_a_runner_leaves_in_its_folders_is_opened_by_path(tmp_path, opts):
    """A named pipe where its stderr used to be read back, and links under every name the shared buffers' folder
    could be given: the evaluation ends with its verdict and the file the links point at is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("kept")
    path = candidate(tmp_path, f'''
        work, shm = sys.argv[4], sys.argv[5]
        for name in ("stderr", "stdout"):
            try:
                os.unlink(os.path.join(work, name))
            except OSError:
                pass
            os.mkfifo(os.path.join(work, name))
        for i in range(1, 64):
            try:
                os.symlink({str(victim)!r}, os.path.join(shm, "buffer%d.bin" % i))
            except OSError:
                pass

        def custom_kernel(x):
            return launch(x)
    ''')
    started = time.monotonic()
    verdict = evaluate(path, MINI, opts)
    assert time.monotonic() - started < 100
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs]
    assert victim.read_text() == "kept"


def test_a_process_that_leaves_its_session_and_token_dies_with_the_evaluation(tmp_path, opts):
    """A grandchild that starts a session of its own, loses its parent and runs with an empty environment (no token)."""
    marker = f"7{os.getpid()}.25"
    path = candidate(tmp_path, f'''
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execve("/bin/sleep", ["sleep", "{marker}"], {{}})
            os._exit(0)

        def custom_kernel(x):
            return launch(x)
    ''')
    verdict = evaluate(path, MINI, opts)
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs]
    deadline = time.monotonic() + 5
    while _with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = _with_marker(marker)
    for pid in survivors:
        os.kill(pid, 9)
    assert not survivors


def test_bytes_in_the_runners_folder_count_against_the_memory_limit(tmp_path):
    """2 GB written to two files in the runner's own folder (disk, not memory: a RAM-backed folder is the same count),
    held while the call goes on, under a 1.5 GB limit that the runners' own memory stays well within. Each file stays
    under the 1 GB a runner's file may reach (RUNNER_FILE_BYTES): one 2 GB file failed the call at 1 GB, before the
    memory watch's next look, whenever the machine was busy."""
    path = candidate(tmp_path, '''
        def custom_kernel(x):
            for part in range(2):
                with open(os.path.join(os.environ["TMPDIR"], f"hoard{part}.bin"), "wb") as f:
                    for _ in range(1000):
                        f.write(b"x" * (1 << 20))
            time.sleep(3)
            return launch(x)
    ''')
    opts = EvalOptions(cache_dir=str(tmp_path / "cache"), timeout_s=120, static_check=False, max_rss_gb=1.5)
    verdict = evaluate(path, MINI, opts)
    bad = [r for r in verdict.rungs if r.failed]
    assert bad and "more than 1.5 GB of host memory" in bad[0].reason, verdict.rungs
