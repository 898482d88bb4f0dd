"""The runner's jail: writes only in its own folders, no reach into other processes, no network."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.harness import jail

ROOT = Path(__file__).resolve().parents[1]
needs_landlock = pytest.mark.skipif(jail.abi_version() < 1, reason="this kernel has no Landlock")

PROBE = textwrap.dedent('''
    import ctypes, json, os, signal, socket, sys
    sys.path.insert(0, sys.argv[1])
    from evolve.harness import jail
    work, outside, parent = sys.argv[2], sys.argv[3], int(sys.argv[4])
    seen = {"status": jail.apply([work])}

    def attempt(name, fn):
        try:
            fn()
            seen[name] = "allowed"
        except OSError as exc:
            seen[name] = f"refused ({exc.errno})"

    attempt("write_own", lambda: open(os.path.join(work, "ok.txt"), "w").write("x"))
    attempt("write_outside", lambda: open(outside, "w").write("forged"))
    attempt("remove_outside", lambda: os.unlink(outside))
    attempt("parent_mem", lambda: open(f"/proc/{parent}/mem", "rb").read(1))
    attempt("parent_fd", lambda: os.readlink(f"/proc/{parent}/fd/0"))
    attempt("signal_parent", lambda: os.kill(parent, 0))
    attempt("tcp", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
    libc = ctypes.CDLL(None, use_errno=True)
    seen["ptrace_parent"] = "refused" if libc.ptrace(16, parent, None, None) != 0 else "allowed"
    print(json.dumps(seen))
''')


@needs_landlock
def test_a_jailed_process_writes_only_its_folder_and_cannot_reach_others(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "peaks.json"
    outside.write_text('{"real": 1}')
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out = subprocess.run([sys.executable, "-c", PROBE, str(ROOT), str(work), str(outside), str(sleeper.pid)],
                             capture_output=True, text=True, timeout=60)
    finally:
        sleeper.kill()
    seen = json.loads(out.stdout)
    assert seen["status"].startswith("landlock ABI")
    assert seen["write_own"] == "allowed"
    for key in ("write_outside", "remove_outside", "parent_mem", "parent_fd", "ptrace_parent"):
        assert seen[key].startswith("refused"), (key, seen)
    assert outside.read_text() == '{"real": 1}'
    if jail.abi_version() >= 4:
        assert seen["tcp"] == "refused (13)", seen
    if jail.abi_version() >= 6:
        assert seen["signal_parent"].startswith("refused"), seen


def test_without_landlock_apply_says_why():
    if jail.abi_version() >= 1:
        status = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
                                 "from evolve.harness import jail; print(jail.apply([]))"],
                                capture_output=True, text=True, timeout=60).stdout
        assert status.startswith("landlock ABI")
    else:
        assert jail.apply([]).startswith("none: ")


@needs_landlock
def test_a_process_with_threads_is_not_called_jailed():
    """Landlock binds only the thread that applies it (and those it starts later): applied in a process where another
    thread already runs, that thread would write anywhere, so apply refuses and says why."""
    code = (f"import sys, threading, time; sys.path.insert(0, {str(ROOT)!r}); from evolve.harness import jail; "
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); print(jail.apply([]))")
    status = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert status.startswith("none: 2 threads were running"), status


DEVICES = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from evolve.harness import jail
    work, card, devices = sys.argv[2], sys.argv[3], sys.argv[4] == "1"
    jail.DEVICE_FILES = jail.DEVICE_FILES[:3] + (card,)  # a stand-in for /dev/nvidia0 where none is
    seen = {"status": jail.apply([work], devices=devices)}
    try:
        open(card, "r+b").close()  # the CUDA driver opens its device files for reading and writing
        seen["open_card"] = "allowed"
    except OSError as exc:
        seen["open_card"] = f"refused ({exc.errno})"
    print(json.dumps(seen))
''')


@needs_landlock
@pytest.mark.parametrize("devices", [True, False])
def test_a_process_jailed_without_devices_cannot_open_a_gpu(tmp_path, devices):
    """The compile-only runner, which never needs a GPU, is jailed without the GPU's device files: whatever it does to
    CUDA_VISIBLE_DEVICES, the driver cannot open a card."""
    work = tmp_path / "work"
    work.mkdir()
    card = tmp_path / "nvidia0"
    card.write_bytes(b"")
    out = subprocess.run([sys.executable, "-c", DEVICES, str(ROOT), str(work), str(card), "1" if devices else "0"],
                         capture_output=True, text=True, timeout=60)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["status"].startswith("landlock ABI")
    assert seen["open_card"] == ("allowed" if devices else "refused (13)")


@needs_landlock
def test_a_tool_run_jailed_writes_only_its_folder(tmp_path):
    """cuobjdump reads cubins a runner wrote: it runs through jail.jailed, which keeps it to its own folder."""
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    script = ("import os, sys\n"
              "open(os.path.join(os.environ['TMPDIR'], 'inside.txt'), 'w').write('x')\n"
              "try:\n    open(sys.argv[1], 'w').write('forged')\n"
              "except OSError as exc:\n    print('refused', exc.errno)\n")
    out = subprocess.run(jail.jailed([sys.executable, "-c", script, str(outside)], str(work)), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "refused 13" and not outside.exists()
    assert (work / "inside.txt").read_text() == "x"
