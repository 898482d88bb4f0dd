"""Nothing the candidate's process says is believed: one test per way a runner was seen to get around the harness.

Each candidate here runs with the static check off (the first line gone), so what stops it is the split itself: the
measurer reads the outputs and times the calls from outside the runner, the runner is jailed, and every message is
checked. The problem is the small softmax of tests/data, so each evaluation takes seconds on a CPU.
"""
import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from kernels import SOFTMAX_KERNEL

from evolve.harness import evaluate, jail
from evolve.harness.parent import ladder

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "data" / "mini_softmax"
needs_landlock = pytest.mark.skipif(jail.abi_version() < 1, reason="this kernel has no Landlock: no jail")

KERNEL = SOFTMAX_KERNEL + textwrap.dedent('''


    @triton.jit
    def noop_kernel(out_ptr, n):
        pass
''')

# Builtins reached through a public attribute of one of Triton's own objects: the module dict of triton.jit.
ESCAPE = textwrap.dedent('''
    B = triton.jit.__globals__["__builtins__"]
    imp = B["__import__"]
    os, sys, time = imp("os"), imp("sys"), imp("time")
    CALLS = [0]
''')


def candidate(tmp_path, body: str) -> Path:
    path = tmp_path / "cand.py"
    path.write_text(KERNEL + ESCAPE + textwrap.dedent(body))
    return path


def failed(verdict):
    bad = [r for r in verdict.rungs if r.failed]
    assert len(bad) == 1, verdict.rungs
    return bad[0]


@pytest.fixture
def opts(tmp_path):
    from evolve.harness import EvalOptions

    return EvalOptions(cache_dir=str(tmp_path / "cache"), timeout_s=240, static_check=False)


@needs_landlock
def test_builtins_through_a_library_object_forge_nothing(tmp_path, opts):
    """With the builtins in hand the candidate writes the caches, signals its parents, reads their pipes and forges
    channel lines; its kernel does nothing. The verdict fails on the outputs, and every cache file is as it was."""
    cache = Path(opts.cache_dir)
    cache.mkdir()
    for name in ("peaks.json", "baselines.json", "plans.json"):
        (cache / name).write_text('{"real": true}')
    path = candidate(tmp_path, f'''
        def custom_kernel(x):
            out = torch.empty_like(x)
            noop_kernel[(1,)](out, 1)
            for name in ("peaks.json", "baselines.json", "plans.json", "forged.json", "compiled/k/__grp__x.json"):
                try:
                    if "/" in name:  # another source's kept kernels
                        os.makedirs({str(cache)!r} + "/compiled/k", exist_ok=True)
                    with B["open"]({str(cache)!r} + "/" + name, "w") as f:
                        f.write('{{"NVIDIA H200": {{"bandwidth": 1.0}}}}')
                except OSError:
                    pass
            for pid in (os.getppid(), os.getpgid(0) - 1):
                try:
                    os.kill(pid, 0)
                    os.open(f"/proc/{{pid}}/fd/3", os.O_WRONLY)
                except OSError:
                    pass
            for fd in range(3, 40):
                try:
                    os.write(fd, b'0000 {{"kind": "rung", "name": "run", "ok": true}}\\n')
                except OSError:
                    pass
            return out
    ''')
    verdict = evaluate(path, MINI, opts)
    bad = failed(verdict)  # unwritten memory may hold anything finite: run or correctness sees it wrong
    assert bad.name in ("compile", "run", "correctness") and not verdict.ok, bad
    assert {name: (cache / name).read_text() for name in ("peaks.json", "baselines.json", "plans.json")} == {
        "peaks.json": '{"real": true}', "baselines.json": '{"real": true}', "plans.json": '{"real": true}'}
    assert not (cache / "forged.json").exists() and not (cache / "compiled" / "k").exists()
    assert verdict.jail.startswith("landlock")


def test_work_the_runner_hides_is_timed_from_outside(tmp_path, opts):
    """A correct answer computed on the host with numpy (reached through the builtins), after a sleep: it passes,
    and every figure counts the whole call, sleep included. Hiding work earns at most its honest speed."""
    path = candidate(tmp_path, '''
        np = imp("numpy")

        def custom_kernel(x):
            noop_kernel[(1,)](x, 1)
            time.sleep(0.25)
            a = np.array(x.tolist(), dtype=np.float64)
            e = np.exp(a - a.max(axis=-1, keepdims=True))
            return torch.tensor((e / e.sum(axis=-1, keepdims=True)).tolist(), dtype=x.dtype)
    ''')
    verdict = evaluate(path, MINI, opts)
    assert verdict.ok, [(r.name, r.reason) for r in verdict.rungs]
    assert all(s["ms"] >= 250 for s in verdict.shapes), verdict.shapes


def test_a_forged_observation_does_not_change_the_verdict(tmp_path, opts):
    """The runner's own pipe carries a well-formed 'outputs' and 'checked' for the very call in flight, before the
    runner answers; the measurer reads the output bytes itself and finds them unwritten."""
    path = candidate(tmp_path, '''
        def custom_kernel(x):
            CALLS[0] += 1
            out = torch.empty_like(x)
            noop_kernel[(1,)](out, 1)
            shape = list(x.shape)
            line = ('{"kind": "outputs", "call": %d, "outputs": [[{"handle": "", "offset": 0, "nbytes": %d, '
                    '"shape": %s, "dtype": "float32"}]]}\\n{"kind": "checked", "call": %d}\\n'
                    % (CALLS[0], x.numel() * 4, shape, CALLS[0]))
            os.write(int(sys.argv[2]), line.encode())
            return out
    ''')
    verdict = evaluate(path, MINI, opts)
    bad = failed(verdict)
    assert bad.name in ("compile", "run") and ("not finite" in bad.reason or "where" in bad.reason), bad


def test_a_malformed_message_is_a_failed_rung_with_its_reason(tmp_path, opts):
    path = candidate(tmp_path, '''
        def custom_kernel(x):
            os.write(int(sys.argv[2]), b'{"kind": "outputs", "call": 1}\\n')
            return launch(x)
    ''')
    verdict = evaluate(path, MINI, opts)
    bad = failed(verdict)
    assert "malformed message" in bad.reason and "missing field 'outputs'" in bad.reason, bad


def test_a_name_the_interpreter_injects_is_not_there(tmp_path, opts):
    """Triton's interpreter copies its module's names (numpy as np) into a kernel's module when it rewrites a
    kernel; the file never defines np, so the static check refuses it, and at run time it is not there."""
    path = tmp_path / "cand.py"
    path.write_text(KERNEL + textwrap.dedent('''
        def custom_kernel(x):
            out = launch(x)
            scale = np.exp(0.0)
            return out if scale == 1.0 else x
    '''))
    refused = evaluate(path, MINI, replace(opts, static_check=True))
    assert "uses the name np, which the file never defines" in failed(refused).reason
    verdict = evaluate(path, MINI, opts)
    bad = failed(verdict)
    assert bad.name in ("compile", "run") and "name 'np' is not defined" in bad.reason, bad


def test_without_a_jail_the_caches_stay_in_memory(tmp_path):
    """Where no jail holds a runner, a file it could write is never read back: peaks and baselines live in the
    parent's memory for the run."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "peaks.json").write_text(json.dumps({"dev": {"bandwidth": 1.0}}))
    assert ladder._load(cache, False, "peaks.json") == {}
    ladder._store(cache, False, "dev", {"bandwidth": 4e12})
    assert ladder._load(cache, False, "peaks.json") == {"dev": {"bandwidth": 4e12}}
    assert json.loads((cache / "peaks.json").read_text()) == {"dev": {"bandwidth": 1.0}}
    ladder._MEMORY.clear()
