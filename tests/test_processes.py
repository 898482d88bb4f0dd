"""Reading an evaluation's processes from /proc: the memory polls of evaluations side by side share one read of the
process table a poll interval, and a process that table missed is counted by the next poll."""
import os
import subprocess
import sys
import time

from evolve.harness import processes

HOLD = "import sys\nblock = bytearray(200 * 2**20)\nprint('ready', flush=True)\nsys.stdin.read()\n"


def test_polls_side_by_side_share_one_read_of_the_process_table_and_the_next_read_sees_what_it_missed():
    processes.recent_parents(0.0)  # a read now, before the process exists
    child = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        shared = processes.recent_parents(60.0)
        assert child.pid not in shared  # the table another poll read moments ago
        assert processes.evaluation_bytes([child.pid], [], table_age_s=60.0) == 0
        time.sleep(0.3)
        assert processes.evaluation_bytes([child.pid], [], table_age_s=0.25) >= 200 * 2**20  # read again: counted
        assert child.pid in processes.recent_parents(60.0)
        assert processes.parents()[child.pid] == os.getpid()  # the plain read: each process's parent
    finally:
        child.kill()
        child.wait()
