"""Timing trusted code in the measurer (baselines, peaks): host-clock medians on the CPU, CUDA events on a GPU."""
import pytest
import torch

from evolve.harness.measurer.timing import GpuTimer, cpu_time, fresh_copy


def test_fresh_copy_is_a_new_allocation_with_the_same_values():
    x = torch.randn(5, 7)
    (copy, scale) = fresh_copy((x, 3))
    assert copy.data_ptr() != x.data_ptr() and torch.equal(copy, x) and scale == 3


def test_cpu_time_checks_every_output_and_labels_its_clock():
    seen = []
    result = cpu_time(lambda x: x * 2, [(torch.ones(3),), (torch.zeros(3),)],
                      check=lambda out, n: seen.append((n, out.sum().item())), budget_s=0.05, max_reps=6)
    assert result["clock"] == "cpu-interpreter" and result["reps"] == len(seen) >= 2
    assert [n for n, _ in seen] == list(range(len(seen)))
    assert all(total == (6.0 if n % 2 == 0 else 0.0) for n, total in seen)


def test_a_feed_gives_every_repetition_its_own_inputs_and_the_check_its_number():
    fed, checked = [], []

    def feed(n):
        fed.append(n)
        return (torch.full((4,), float(n)),)

    cpu_time(lambda x: x + 1, feed, check=lambda out, n: checked.append((n, out.tolist())), budget_s=0.05,
             max_reps=5)
    assert fed == list(range(len(fed))) and len(fed) >= 2
    assert checked == [(n, [n + 1.0] * 4) for n in fed]


@pytest.mark.gpu
def test_gpu_timer_agrees_with_do_bench():
    import triton.testing

    timer = GpuTimer(torch.device("cuda"))
    x = torch.randn(8192, 8192, device="cuda")
    ours = timer.time(lambda t: torch.softmax(t, -1), [(x,)])
    theirs = triton.testing.do_bench(lambda: torch.softmax(x, -1), warmup=25, rep=200, return_mode="median")
    assert 0.9 < ours["ms"] / theirs < 1.1, (ours, theirs)


def test_window_fixed_cost_is_never_more_than_either_observation():
    """The cost subtracted from a window is the calibrated copies and read-back (interpolated between the two sizes
    calibrated) or the window's own, whichever is less, plus the switches: a candidate that slows the measurer's parts
    of its window (so the observed parts grow) cannot make more subtracted than the calibration, and a calibration
    taken while the device was slow is corrected by the window's own events."""
    from evolve.harness.measurer.calibration import fixed_ms as fixed

    plan = {"k": 101, "one_ms": 0.5, "many_ms": 4.5, "hops_ms": 0.3}
    assert fixed(plan, 1) == pytest.approx(0.8)
    assert fixed(plan, 51) == pytest.approx(0.5 + 2.0 + 0.3)
    assert fixed(plan, 101) == pytest.approx(4.8)
    assert fixed(plan, 101, observed=3.5) == pytest.approx(3.8)  # a stale, slow calibration: the window's own
    assert fixed(plan, 101, observed=9.0) == pytest.approx(4.8)  # slowed parts: never more than calibrated
    single = {"k": 1, "one_ms": 0.5, "many_ms": 0.5, "hops_ms": 0.3}
    assert fixed(single, 1, observed=0.4) == pytest.approx(0.7)


def test_kept_window_calibrations_are_each_the_fastest_seen():
    """The parent keeps a card model's window calibrations (harness/parent/ladder.py): each case's plan and the switches
    as the fastest measured, so what later evaluations subtract from their windows never grows; a plan for another
    number of calls per window replaces the old one (its sizes differ)."""
    from evolve.harness.parent.ladder import _fastest_plan

    def plan(case, k, one, many):
        return {"kind": "plan", "key": "K", "case": case, "k": k, "one_ms": one, "many_ms": many, "hops_ms": None}

    hops = {"kind": "plan", "key": "K", "case": None, "k": None, "one_ms": None, "many_ms": None}

    def unstamped(entry):
        assert all(isinstance(v["checked"], float) for v in entry.values() if isinstance(v, dict))
        return {k: {f: x for f, x in v.items() if f != "checked"} if isinstance(v, dict) else v
                for k, v in entry.items() if k != "hops_checked"}

    entry = _fastest_plan({}, plan("fp32 8x8", 4, 0.5, 1.5))
    assert unstamped(entry) == {"fp32 8x8": {"k": 4, "one_ms": 0.5, "many_ms": 1.5}}
    entry = _fastest_plan(entry, plan("fp32 8x8", 4, 0.4, 1.7))
    assert unstamped(entry)["fp32 8x8"] == {"k": 4, "one_ms": 0.4, "many_ms": 1.5}
    entry = _fastest_plan(entry, plan("fp32 8x8", 2, 0.6, 0.9))
    assert unstamped(entry)["fp32 8x8"] == {"k": 2, "one_ms": 0.6, "many_ms": 0.9}
    entry = _fastest_plan(entry, {**hops, "hops_ms": 0.3})
    assert isinstance(entry["hops_checked"], float)
    entry = _fastest_plan(entry, {**hops, "hops_ms": 0.35})
    assert entry["hops_ms"] == 0.3 and entry["fp32 8x8"]["k"] == 2
    assert _fastest_plan(entry, {**hops, "hops_ms": 0.25})["hops_ms"] == 0.25


def test_kept_calibrations_are_measured_again_once_old():
    """A kept peak or window calibration is believed for RECHECK_S only: older (or never stamped) it counts as
    missing, so the set-up measures it again under the lease, and keeps the better of the two (the higher peak,
    the lower fixed cost: another process's work on the card only ever makes a peak low and a cost high)."""
    import time

    from evolve.harness.measurer import peaks
    from evolve.harness.measurer.calibration import RECHECK_S, fresh

    now = time.time()
    assert fresh({}, {"checked": now - 60})
    assert not fresh({}, {"checked": now - RECHECK_S - 1})
    assert not fresh({}, {"bandwidth": 4e12})  # kept before stamps: re-checked once
    assert not fresh({}, None) and not fresh({}, {"checked": "soon"})
    assert not fresh({}, {"hops_ms": 0.1, "hops_checked": now - RECHECK_S - 1}, "hops_checked")
    assert not fresh({"recheck_s": 10.0}, {"checked": now - 60})

    kept = {"bandwidth": 4.0e12, "flops": {"bfloat16": 7e14, "float32": 5e13}, "checked": now - RECHECK_S - 1}
    slow = {"bandwidth": 2.0e12, "flops": {"bfloat16": 8e14, "float32": 1e13}}
    assert peaks.highest(kept, slow) == {"bandwidth": 4.0e12, "flops": {"bfloat16": 8e14, "float32": 5e13}}
    assert peaks.highest(None, slow) == slow
    assert peaks.highest({"bandwidth": float("nan"), "flops": {}}, slow) == slow


def test_a_case_stops_early_only_once_its_last_windows_agree():
    from evolve.harness.measurer.gpu_mode import SETTLED_WINDOWS
    from evolve.harness.measurer.gpu_mode import settled as _settled

    assert SETTLED_WINDOWS == 4
    assert not _settled([1.0, 1.0, 1.0])  # three windows are the minimum, four agreeing ones the early stop
    assert _settled([1.0, 1.004, 0.998, 1.003])
    assert _settled([1.5, 1.0, 1.004, 0.998, 1.003])  # an early outlier does not hold it back
    assert not _settled([1.0, 1.02, 0.998, 1.003])
    assert not _settled([1.0, 1.0, 1.0, float("nan")])
    assert not _settled([0.0, 0.0, 0.0, 0.0])


@pytest.mark.gpu
def test_a_second_evaluation_keeps_the_window_calibrations_and_times_alike(tmp_path):
    """The second evaluation on a card measures no window calibration (each kept as the fastest seen), takes no
    lease for its set-up, and times the same kernel within 5% of the first."""
    import json
    from pathlib import Path

    from evolve.harness import EvalOptions, evaluate, load_problem

    root = Path(__file__).resolve().parents[1]
    problem = root / "tests" / "adversarial" / "problem"
    options = EvalOptions(device="cuda", cache_dir=str(tmp_path / "cache"), timeout_s=300)
    first = evaluate(root / "tests" / "adversarial" / "cases" / "honest_control.py", problem, options)
    second = evaluate(root / "tests" / "adversarial" / "cases" / "honest_control.py", problem, options)
    assert first.ok and second.ok, (first.failure, second.failure)
    kept = json.loads((tmp_path / "cache" / "plans.json").read_text())
    (entry,) = kept.values()
    labels = {case.label for case in load_problem(problem).benchmarks}
    assert labels <= set(entry) and isinstance(entry["hops_ms"], float)
    split = second.setup[0]["prepare_split"]
    assert split["plans"] < 0.2 and split["hops"] < 0.05, split
    ratios = [b["ms"] / a["ms"] for a, b in zip(first.shapes, second.shapes)]
    assert all(abs(r - 1) <= 0.05 for r in ratios), ratios


def test_a_calibration_that_is_no_number_is_not_kept():
    from evolve.harness.parent.ladder import _fastest_plan

    bad = {"kind": "plan", "key": "K", "case": "fp32 8x8", "k": 4, "one_ms": float("nan"), "many_ms": 1.0,
           "hops_ms": None}
    kept = {"fp32 8x8": {"k": 4, "one_ms": 0.5, "many_ms": 1.5}}
    assert _fastest_plan(kept, bad) == kept
    assert _fastest_plan({}, {**bad, "case": None, "one_ms": None, "many_ms": None, "k": None, "hops_ms": 0.0}) == {}
