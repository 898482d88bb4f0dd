"""Several outputs of different dtypes, one of them integer, through every rung (tests/data/row_max: each row's
maximum in float32 and its column as int64, declared with output_dtypes)."""
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate

ROW_MAX = Path(__file__).resolve().parent / "data" / "row_max"


@pytest.mark.slow
@pytest.mark.parametrize("kernel, rung, fragment", [
    ("seeds/row_max", None, None),
    ("kernels/index_off_by_one", "correctness", "> rtol 0"),  # integers are compared exactly
    ("kernels/swapped_outputs", "run", "output dtype int64, expected float32"),
    # an unwritten int64 holds whatever the runner's allocation held (its minimum where the memory was poisoned)
    ("kernels/index_unwritten", "correctness", "> rtol 0"),
])
def test_two_outputs_one_integer(kernel, rung, fragment, cache_dir):
    verdict = evaluate(ROW_MAX / f"{kernel}.py", ROW_MAX, EvalOptions(cache_dir=cache_dir))
    failed = [(r.name, r.reason) for r in verdict.rungs if r.failed]
    if rung is None:
        assert verdict.ok, failed
        assert verdict.rung("correctness").metrics["checks"] == 4
        return
    assert len(failed) == 1 and failed[0][0] == rung and fragment in failed[0][1], failed


class _RecordingRunner:
    """The runner's side of a correctness call, as the measurer sees it: the number of input sets of each call, and
    an all-zero output of the expected shape and dtype for each."""

    def __init__(self):
        self.calls: list[int] = []

    def call(self, sets, purpose, poison=False):
        import torch

        self.calls.append(len(sets))
        return [tuple(torch.zeros(shape, dtype=getattr(torch, dtype)) for shape, dtype in s.expects) for s in sets]


def test_correctness_calls_take_as_many_seeds_as_fit_a_share_of_the_memory(monkeypatch):
    """Every seed in one call where their inputs and outputs fit (all of evolve's problems); one seed a call where
    they do not (today's KernelBench cases are 13 GB a seed, three copies of each at once on the card)."""
    import torch

    from evolve.harness.measurer import checks
    from evolve.harness.shared.formats import load_problem, reference_for
    from evolve.harness.measurer.inputs import InputMaker

    problem = load_problem(Path(__file__).resolve().parents[1] / "problems" / "softmax")
    reference = reference_for(problem)
    judge = checks.Checks(problem, reference, InputMaker(problem, reference, 7, torch.device("cpu")))
    for share, calls in ((checks.MEASURER_MEMORY_SHARE, [3]), (1e-15, [1, 1, 1])):
        monkeypatch.setattr(checks, "MEASURER_MEMORY_SHARE", share)
        runner = _RecordingRunner()
        results = judge.correctness(runner, problem.tests[0], [11, 12, 13], torch.device("cpu"))
        assert runner.calls == calls
        assert len(results) == 3 and all("zeros" in r["reason"] or "max_rel" in r["reason"] for r in results)
