"""The launch log's stream watch, driven the way Triton's launcher drives it (the hook runs only on real GPU launches,
and on a GPU by the marked test below and tests/adversarial/cases/compiled_side_stream.py)."""
import pytest
from triton.compiler.compiler import LazyDict

from evolve.harness.launches import LaunchLog

HARNESS = (0, 0x7)


def test_a_launch_on_the_harness_stream_passes():
    log = LaunchLog()
    hook = log.observer(HARNESS, lambda: HARNESS)
    hook(LazyDict({"name": "k", "function": 1, "stream": 0x7}))
    hook()  # JITFunction.run's own call, before Triton picks the stream
    assert log.launches == 2 and log.side_stream is None


def test_the_stream_handed_to_the_launcher_wins_over_the_current_one():
    log = LaunchLog()
    hook = log.observer(HARNESS, lambda: HARNESS)
    hook(LazyDict({"name": "k", "function": 1, "stream": 0x99}))  # compiled[grid](..., stream=side)
    assert log.side_stream == (0, 0x99)


def test_the_current_stream_or_device_changed_is_off_the_stream():
    for where in ((0, 0x99), (1, 0x7)):
        log = LaunchLog()
        log.observer(HARNESS, lambda: where)()
        assert log.side_stream == where


def test_the_candidates_launch_metadata_function_is_never_called():
    calls = []
    metadata = LazyDict({"name": "k", "function": 1, "stream": 0x7})
    metadata.add(lambda *args: calls.append(args) or {"stream": 0x7}, ())
    log = LaunchLog()
    log.observer(HARNESS, lambda: HARNESS)(metadata)
    assert calls == [] and log.side_stream is None


def test_an_unreadable_launch_counts_as_off_the_stream_and_never_raises():
    log = LaunchLog()
    log.observer(HARNESS, lambda: 1 / 0)(object())
    assert log.side_stream[1].startswith("unreadable launch: ZeroDivisionError")


def test_removing_the_hook_from_tritons_chain_is_seen():
    from triton import knobs

    log = LaunchLog()
    hook = log.observer(HARNESS, lambda: HARNESS)
    log._install_hook(hook)
    try:
        assert log.hook_intact()
        knobs.runtime.launch_enter_hook.remove(hook)
        assert not log.hook_intact()
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


@pytest.mark.gpu
def test_on_a_gpu_the_hook_sees_each_launch_once_with_its_stream():
    import torch
    import triton
    import triton.language as tl
    from triton import knobs

    @triton.jit
    def fill_kernel(out_ptr):
        tl.store(out_ptr + tl.program_id(0), 1.0)

    out = torch.zeros(4, device="cuda")
    fill_kernel[(4,)](out)  # compiled before the hook goes in
    device = torch.cuda.current_device()
    here = (device, torch.cuda.current_stream().cuda_stream)
    log = LaunchLog()
    hook = log.observer(here, lambda: (torch.cuda.current_device(), torch.cuda.current_stream().cuda_stream))
    assert log._install_hook(hook)
    try:
        fill_kernel[(4,)](out)
        fill_kernel[(4,)](out)
        torch.cuda.synchronize()
        assert log.launches == 2 and log.side_stream is None
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            fill_kernel[(4,)](out)
        torch.cuda.synchronize()
        assert log.launches == 3 and log.side_stream == (device, side.cuda_stream)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
