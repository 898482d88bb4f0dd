"""The launch log's stream watch, driven the way Triton's launcher drives it (the hook runs only on real GPU launches,
so the GPU path itself is covered by tests/adversarial/cases/compiled_side_stream.py on a GPU)."""
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
