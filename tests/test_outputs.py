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
