"""A candidate that crashes, hangs, exits, sends garbage or escapes its process group fails one rung, and the
parent's next evaluation runs normally."""
import os
import subprocess
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest
from kernels import SOFTMAX_KERNEL

from evolve.harness import evaluate

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX = ROOT / "tests" / "adversarial" / "problem"  # the softmax problem with small test shapes
SOLUTIONS = ROOT / "problems" / "softmax" / "solutions"
HONEST = SOLUTIONS / "correct" / "single_block.py"

KERNEL = SOFTMAX_KERNEL


def candidate(tmp_path, body: str) -> Path:
    path = tmp_path / "cand.py"
    path.write_text(KERNEL + textwrap.dedent(body))
    return path


def failed(verdict):
    bad = [r for r in verdict.rungs if r.failed]
    assert len(bad) == 1, verdict.rungs
    return bad[0]


@pytest.mark.slow
def test_crash_and_hang_then_honest_kernel_passes(tmp_path, options):
    crash = evaluate(SOLUTIONS / "wrong" / "out_of_bounds.py", SOFTMAX, options)
    assert "crashed" in failed(crash).reason
    started = time.monotonic()
    hang = evaluate(SOLUTIONS / "wrong" / "hang.py", SOFTMAX, replace(options, timeout_s=15))
    assert "timed out after 15 s" in failed(hang).reason and "its first calls" in failed(hang).reason
    assert time.monotonic() - started < 60
    honest = evaluate(HONEST, SOFTMAX, options)
    assert honest.ok, [r.reason for r in honest.rungs]


def test_process_exit_before_verdict(tmp_path, options):
    path = candidate(tmp_path, '''
        import os
        def custom_kernel(x):
            launch(x)
            os._exit(0)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False))
    assert "exited (code 0) before a verdict" in failed(verdict).reason


def test_a_keeper_whose_runner_is_killed_by_sigkill_ends_by_it_too():
    """SIGKILL, from the OOM killer or anyone: the keeper ends as its runner did, so the verdict names the signal.
    The keeper once tried to set SIGKILL's action and crashed (exit 1), and the verdict said `OSError: [Errno 22]`."""
    import sys

    keeper = ROOT / "evolve" / "harness" / "runner" / "keeper.py"
    done = subprocess.run([sys.executable, "-S", str(keeper), "/bin/sh", "-c", "kill -9 $$"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == -9 and "Errno" not in done.stderr, (done.returncode, done.stderr)


def test_printed_and_written_verdicts_are_not_verdicts(tmp_path, options):
    """Text that looks like the harness's messages, printed and written to the runner's own pipe: the parent never
    reads the runner, and the measurer takes the garbage on its pipe as the candidate's failure."""
    path = candidate(tmp_path, '''
        import os, sys
        def custom_kernel(x):
            print('{"kind": "rung", "name": "correctness", "ok": true}')
            print('{"kind": "done"}')
            fd = int(sys.argv[2])
            os.write(fd, b'0000 {"kind": "done"}\\n')
            return launch(x)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False))
    assert "malformed message" in failed(verdict).reason
    assert not verdict.ok


def test_escaped_session_is_killed(tmp_path, options):
    marker = f"evolve-escape-{os.getpid()}-{time.time_ns()}"
    path = candidate(tmp_path, f'''
        import subprocess
        def custom_kernel(x):
            subprocess.Popen(["sleep", "300", "{marker}"], start_new_session=True, stderr=subprocess.DEVNULL)
            while True:
                pass
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False, timeout_s=15))
    assert "timed out" in failed(verdict).reason
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"escaped processes survived: {left}"


def test_host_memory_limit(tmp_path, options):
    path = candidate(tmp_path, '''
        def custom_kernel(x):
            hog = torch.ones(1 << 30)  # 4 GiB
            return launch(x)
    ''')
    verdict = evaluate(path, SOFTMAX, replace(options, static_check=False, max_rss_gb=1.0))
    assert "more than 1 GB of host memory" in failed(verdict).reason


def test_python_exception_is_a_failed_rung(tmp_path, options):
    path = candidate(tmp_path, '''
        def custom_kernel(x):
            if x.shape[1] > 100:
                raise ValueError("too wide")
            return launch(x)
    ''')
    verdict = evaluate(path, SOFTMAX, options)
    bad = failed(verdict)
    assert bad.name == "run" and "ValueError: too wide" in bad.reason


def test_a_static_rejection_starts_no_child_and_no_cuda(tmp_path, options):
    """The parent judges the file first: no child process, and no CUDA call in the parent (here there is no GPU,
    so asking torch for a device name would raise)."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef custom_kernel(x):\n    return x\n")
    verdict = evaluate(bad, SOFTMAX, replace(options, device="cuda"))
    assert verdict.setup == () and verdict.device == "cuda" and verdict.versions["torch"]
    assert [(r.name, r.status) for r in verdict.rungs] == [
        ("load", "failed"), ("compile", "skipped"), ("run", "skipped"), ("correctness", "skipped"),
        ("benchmark", "skipped"), ("roofline", "skipped")]
    assert "imports os" in verdict.rungs[0].reason and not verdict.ok and verdict.fitness is None


def test_an_evaluation_uses_processes_started_ahead_only_when_it_asks(tmp_path, options):
    """Processes started ahead (evolve run's loop) are taken only by an evaluation that asks for them; any other
    starts its own, so what ran before in the process does not shape its verdict, and a failure there names the
    mode, not a device remembered from another verdict."""
    from evolve.harness.parent.sandbox import STARTED_AHEAD

    STARTED_AHEAD.clear()
    no_launch = candidate(tmp_path, "\ndef custom_kernel(x):\n    return torch.empty_like(x)\n")
    first = evaluate(no_launch, SOFTMAX, replace(options, prewarm=True))
    assert failed(first).name == "compile"
    spare = {key: list(crews) for key, crews in STARTED_AHEAD._ready.items()}
    assert [len(crews) for crews in spare.values()] == [1]  # one started for the next evaluation
    second = evaluate(no_launch, SOFTMAX, options)
    assert failed(second).name == "compile"
    assert STARTED_AHEAD._ready == spare  # not taken
    rejected = evaluate(SOLUTIONS / "wrong" / "method_softmax.py", SOFTMAX, options)
    assert failed(rejected).name == "load" and rejected.device in ("cpu", "cuda")
    third = evaluate(no_launch, SOFTMAX, replace(options, prewarm=True))
    assert failed(third).name == "compile"
    before = [crew for crews in spare.values() for crew in crews]
    after = [crew for crews in STARTED_AHEAD._ready.values() for crew in crews]
    assert len(after) == 1 and after[0] not in before  # taken, and a new one started
    STARTED_AHEAD.clear()


def test_evaluations_sharing_a_host_split_its_cores(tmp_path):
    """With a thread count, every process of the evaluation is started with it (the interpreter's runner keeps its
    single BLAS thread); without one, the processes inherit the parent's settings."""
    from evolve.harness.parent.sandbox import THREAD_VARIABLES, EvaluationProcesses

    def environ(pid):
        pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)

    split = EvaluationProcesses("cpu", str(tmp_path / "cache"), threads=3)
    plain = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    try:
        for name, proc in split.procs.items():
            env = environ(proc.pid)
            want = "1" if name == "interpret" else "3"
            assert [env.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")] == [want, want], name
            if name != "interpret":
                assert all(env.get(v) == "3" for v in THREAD_VARIABLES), name
        env = environ(plain.procs["measurer"].pid)
        assert all(env.get(v) == os.environ.get(v) for v in THREAD_VARIABLES)
    finally:
        split.discard()
        plain.discard()


def test_the_compile_ahead_runner_runs_at_the_lowest_priority(tmp_path):
    """Beside a GPU runner, the compile-only runner (which the lease does not stop) starts at nice 19, so candidate
    code there cannot take the CPU from the card's timing; the other processes, and the CPU mode's runners, at 0."""
    from evolve.harness.parent.sandbox import COMPILE_AHEAD_NICE, EvaluationProcesses

    def nice(pid):
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])

    own = nice(os.getpid())
    # started as interpreters: a GPU crew forked on a machine without CUDA ends before its priority can be read (the
    # fork server applies the same priority: test_forkserver.py)
    gpu = EvaluationProcesses("gpu", str(tmp_path / "cache"), fork=False)
    cpu = EvaluationProcesses("cpu", str(tmp_path / "cache"))
    try:
        assert nice(gpu.procs["compile"].pid) == min(own + COMPILE_AHEAD_NICE, 19)
        assert [nice(gpu.procs[n].pid) for n in ("gpu", "measurer")] == [own, own]
        assert {nice(p.pid) for p in cpu.procs.values()} == {own}
    finally:
        gpu.discard()
        cpu.discard()



def test_memory_is_read_every_poll_interval_whatever_the_measurer_says(tmp_path, options, monkeypatch):
    """The parent reads an evaluation's memory from /proc every MEMORY_POLL_S (each read walks its processes and
    folders), not once per message as well: the reads come at that pace through a whole honest evaluation."""
    from evolve.harness.parent import sandbox

    reads = []
    real = sandbox.EvaluationProcesses._over_memory
    monkeypatch.setattr(sandbox.EvaluationProcesses, "_over_memory",
                        lambda self, *a: reads.append(time.monotonic()) or real(self, *a))
    began = time.monotonic()
    verdict = evaluate(HONEST, SOFTMAX, options)
    took = time.monotonic() - began
    assert verdict.ok, verdict.rungs
    gaps = [b - a for a, b in zip(reads, reads[1:])]
    assert reads and min(gaps) >= 0.9 * sandbox.MEMORY_POLL_S, sorted(gaps)[:5]
    assert len(reads) <= took / sandbox.MEMORY_POLL_S + 2
    assert verdict.setup[-1]["memory_poll_s"] > 0
