"""Reading an evaluation's processes from /proc: the memory polls of evaluations side by side share one read of the
process table a poll interval, and a process that table missed is counted by the next poll."""
import os
import subprocess
import sys
import time

from evolve.harness.shared import processes

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


def _holding_child():
    child = subprocess.Popen([sys.executable, "-c", HOLD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def test_a_reader_process_counts_what_the_parent_would_and_reads_in_a_process_of_its_own(tmp_path):
    """The lanes' memory reads run in reader processes (harness/parent/memory_reader.py), so they take none of the
    parent's interpreter lock; a reader's count is the parent's own read's."""
    from evolve.harness.parent import memory_reader

    (tmp_path / "kept").write_bytes(b"k" * 3 * 2**20)
    child = _holding_child()
    try:
        counted, reader_cpu_s = memory_reader.evaluation_bytes([child.pid], [tmp_path], 0.0)
        own = processes.evaluation_bytes([child.pid], [tmp_path], 0.0)
        assert counted >= 203 * 2**20 and abs(counted - own) < 8 * 2**20, (counted, own)
        assert reader_cpu_s > 0
        readers = memory_reader.READERS._idle
        assert readers and all(r.proc.pid != os.getpid() and r.proc.poll() is None for r in readers)
        assert processes.parents()[readers[-1].proc.pid] == os.getpid()  # a child of this process, which it kills
        with open(f"/proc/{readers[-1].proc.pid}/environ", "rb") as f:
            assert f.read() == b""  # none of this process's keys (OPENAI_API_KEY and the like)
    finally:
        child.kill()
        child.wait()


def test_a_reader_that_dies_stops_or_answers_out_of_turn_leaves_the_evaluation_uninspectable_never_uncounted(
        tmp_path, monkeypatch):
    import json
    import signal

    import pytest

    from evolve.harness.parent import memory_reader

    monkeypatch.setattr(memory_reader, "ANSWER_TIMEOUT_S", 1.0)
    readers = memory_reader.Readers()
    child = _holding_child()
    try:
        assert readers.read([child.pid], [tmp_path], 0.0)[0] >= 200 * 2**20
        for harm in ("kill", "stop", "forged", "unended"):
            reader = readers._idle[-1]
            if harm == "kill":
                reader.proc.kill()
                reader.proc.wait()
            elif harm == "stop":
                os.kill(reader.proc.pid, signal.SIGSTOP)
            else:  # a line already waiting on the reader's answer pipe, before the parent's request, or half of one
                os.kill(reader.proc.pid, signal.SIGSTOP)
                forged = json.dumps({"bytes": 0, "cpu_s": 0.0, "nonce": None}).encode()
                with open(f"/proc/{reader.proc.pid}/fd/1", "wb") as pipe:
                    pipe.write(forged + b"\n" if harm == "forged" else forged[:10])
            with pytest.raises(processes.Uninspectable, match="stopped answering"):
                readers.read([child.pid], [tmp_path], 0.0)
            assert reader.proc.poll() is not None and reader not in readers._idle  # killed, never used again
            assert readers.read([child.pid], [tmp_path], 0.0)[0] >= 200 * 2**20  # a fresh reader counts it
    finally:
        child.kill()
        child.wait()


def test_what_a_reader_cannot_count_it_says_and_where_none_starts_the_parent_reads(tmp_path, monkeypatch):
    import pytest

    from evolve.harness.parent import memory_reader

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(processes.MAX_FOLDER_ENTRIES + 1):
        (folder / str(i)).touch()
    readers = memory_reader.Readers()
    with pytest.raises(processes.Uninspectable, match=f"more than {processes.MAX_FOLDER_ENTRIES} files"):
        readers.read([os.getpid()], [folder], 0.0)
    reader = readers._idle[-1]  # it answered: kept for the next read
    assert readers.read([os.getpid()], [tmp_path / "none"], 0.0)[0] > 0 and readers._idle == [reader]
    reader.close()

    def no_process():
        raise OSError("Resource temporarily unavailable")

    monkeypatch.setattr(memory_reader, "Reader", no_process)  # a host out of processes: the parent reads itself
    counted, reader_cpu_s = memory_reader.Readers().read([os.getpid()], [tmp_path / "none"], 0.0)
    assert counted > 0 and reader_cpu_s == 0.0
