"""Known answers for the error metrics and the tolerance policy."""
import math
import os
from pathlib import Path

import pytest
import torch

from evolve.harness import load_problem
from evolve.harness.shared.problem import foreign_tolerance
from evolve.harness.shared.metrics import error_metrics, judge, max_rel, psnr, unravel, worst_of

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _seeded():
    """Every draw here is seeded: a known answer that holds for most draws is not a known answer."""
    torch.manual_seed(0)


def test_identical_outputs():
    ref = torch.tensor([[0.25, 0.75], [0.5, 0.5]], dtype=torch.float64)
    m = error_metrics(ref.clone(), ref, floor=1e-30, rtol=1e-4)
    assert m["max_abs"] == 0 and m["max_rel"] == 0 and m["mse"] == 0
    assert m["psnr"] == math.inf and m["cosine"] == pytest.approx(1.0)
    assert m["n_off"] == 0 and judge(m, 1e-4, 0.9999) is None


def test_known_errors():
    ref = torch.tensor([[1.0, 2.0], [4.0, 8.0]], dtype=torch.float64)
    out = ref.clone()
    out[1, 0] = 4.4  # abs 0.4, rel 0.1
    m = error_metrics(out, ref, floor=1e-30, rtol=1e-2)
    assert m["max_abs"] == pytest.approx(0.4)
    assert m["max_rel"] == pytest.approx(0.1)
    assert m["mse"] == pytest.approx(0.16 / 4)
    assert m["rmse"] == pytest.approx(0.2)
    assert m["psnr"] == pytest.approx(10 * math.log10(64 / 0.04))
    assert m["worst_index"] == [1, 0]
    assert m["n_off"] == 1 and m["frac_off"] == pytest.approx(0.25)
    reason = judge(m, 1e-2, 0.0)
    assert "max_rel=0.1 at (1, 0)" in reason and "25% of elements off" in reason


def test_cosine_of_scaled_output():
    ref = torch.rand(100, dtype=torch.float64) + 0.1
    m = error_metrics(ref * 2, ref, floor=1e-30, rtol=10.0)
    assert m["cosine"] == pytest.approx(1.0)  # direction right, scale wrong: the relative test catches it
    assert m["max_rel"] == pytest.approx(1.0)


def test_floor_makes_tiny_values_absolute():
    ref = torch.tensor([1e-35, 0.5], dtype=torch.float64)
    out = torch.tensor([0.0, 0.5], dtype=torch.float64)
    m = error_metrics(out, ref, floor=1e-30, rtol=1e-4)
    assert m["max_rel"] == pytest.approx(1e-5)  # 1e-35 / 1e-30
    assert judge(m, 1e-4, 0.0) is None


def test_a_reference_below_the_floor_is_judged_element_by_element():
    """One element (a 1x1 test shape) whose reference underflows below the floor: a kernel that flushes it to zero is
    within the policy, and the cosine of a zero vector (no direction) does not fail it; one off by more than the
    absolute tolerance still fails, and an all-zero output of a reference above the floor still fails on both."""
    ref = torch.tensor([[1e-38]], dtype=torch.float64)
    m = error_metrics(torch.zeros(1, 1, dtype=torch.float64), ref, floor=1e-30, rtol=1e-4)
    assert m["cosine"] == 1.0 and judge(m, 1e-4, 0.999999) is None
    flipped = error_metrics(torch.tensor([[-1e-38]], dtype=torch.float64), ref, floor=1e-30, rtol=1e-4)
    assert judge(flipped, 1e-4, 0.999999) is None  # 2e-38 apart: within 1e-34
    far = error_metrics(torch.tensor([[1e-33]], dtype=torch.float64), ref, floor=1e-30, rtol=1e-4)
    assert far["n_off"] == 1 and far["cosine"] == pytest.approx(1.0) and judge(far, 1e-4, 0.999999) is not None
    zero = error_metrics(torch.zeros(3, dtype=torch.float64), torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64),
                         floor=1e-30, rtol=1e-4)
    assert zero["cosine"] == 0.0 and zero["n_off"] == 3 and "max_rel" in judge(zero, 1e-4, 0.999999)
    below = error_metrics(torch.tensor([1e-34, 0.0]), torch.tensor([0.0, 1e-34]), floor=1e-30, rtol=1e-2)
    assert below["cosine"] == 1.0 and judge(below, 1e-2, 0.9999) is None  # sub-floor noise, each within 1e-32


def test_a_failed_element_shows_output_reference_and_whether_the_floor_judged_it():
    """An honest erf GELU in float32 against float64 under the scaffold's float32 policy (rtol 1e-5, floor 1e-6):
    the worst element is where GELU cancels to almost zero, which only the values there show: the floor, not the
    kernel, is what to change."""
    x = torch.linspace(-6, 6, 4001).reshape(1, -1)
    out = 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    ref = 0.5 * x.double() * (1 + torch.erf(x.double() / math.sqrt(2)))
    m = error_metrics(out, ref, floor=1e-6, rtol=1e-5)
    reason = judge(m, 1e-5, 0.99999)
    i, j = m["worst_index"]
    assert f"(out {float(out[i, j]):.7g}, ref {float(ref[i, j]):.7g}, below the floor 1e-06" in reason, reason
    assert x[i, j] < -4  # far in the negative tail
    wider = error_metrics(out, ref, floor=1e-2, rtol=1e-5)
    assert judge(wider, 1e-5, 0.99999) is None  # a floor at the inputs' scale: the honest kernel passes


def test_psnr_edges():
    assert psnr(0.0, 1.0) == math.inf
    assert psnr(1.0, 10.0) == pytest.approx(20.0)


def test_unravel_and_worst_of():
    assert unravel(7, (2, 3, 2)) == [1, 0, 1]
    a = {"max_abs": 1, "max_rel": 0.1, "mse": 1, "rmse": 1, "frac_off": 0, "n_off": 0, "psnr": 50, "cosine": 0.9,
         "rel_l2": 0.3, "norm_ratio": 0.8, "worst_index": [0]}
    b = {**a, "max_rel": 0.2, "psnr": 40, "cosine": 0.99, "rel_l2": 0.1, "norm_ratio": 1.0, "worst_index": [5]}
    w = worst_of(a, b)
    assert w["max_rel"] == 0.2 and w["psnr"] == 40 and w["cosine"] == 0.9 and w["worst_index"] == [5]
    assert w["rel_l2"] == 0.3 and w["norm_ratio"] == 0.8  # the ratio of the output whose L2 error is the worst


def test_max_rel_sees_nan():
    ref = torch.ones(4)
    out = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    assert not max_rel(out, ref, 1e-30) <= 1.0


def _foreign(out, ref, dtype):
    """judge() under the policy of a foreign format's output of this dtype (no element rule: the format has its own)."""
    tol = foreign_tolerance(dtype)
    return judge(error_metrics(out, ref, tol.floor, tol.rtol), tol.rtol, tol.min_cosine)


def _truncated_bf16(x):
    """float32 -> bfloat16 by dropping the low 16 bits, as the CPU interpreter converts (a bias toward zero)."""
    return (x.float().view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)


@pytest.mark.parametrize("dtype, scale, passes", [
    ("float32", 1.002, True), ("float32", 1.01, False),  # the bound: 0.45% in float32
    ("bfloat16", 1.02, True), ("bfloat16", 1.1, False),  # 4.5% in bfloat16 and float16
    ("float16", 0.0, False), ("float32", 2.0, False), ("float32", -1.0, False), ("float32", 0.5, False),
])
def test_the_whole_output_check_sees_scale_the_cosine_cannot(dtype, scale, passes):
    ref = _softmax64(torch.randn(8, 16384, dtype=torch.float64))
    out = ref * scale
    reason = _foreign(out, ref, dtype)
    assert error_metrics(out, ref, 1e-30, math.inf)["cosine"] == pytest.approx(1.0 if scale >= 0 else -1.0)
    assert (reason is None) == passes, reason
    if not passes and scale > 0:
        assert f"its norm is {scale:g}x the reference's" in reason and "scale is off" in reason
    if scale == 0:
        assert "the output is all zeros" in reason


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_honest_low_precision_passes_the_whole_output_check(dtype):
    """Rounding the float64 reference once into the output dtype, and (bfloat16) the interpreter's truncation."""
    x = torch.randn(64, 3000, dtype=torch.float64) * 3
    for ref in (_softmax64(x), x @ torch.randn(3000, 200, dtype=torch.float64)):
        assert _foreign(ref.to(getattr(torch, dtype)), ref, dtype) is None
        if dtype == "bfloat16":
            assert _foreign(_truncated_bf16(ref), ref, dtype) is None


def test_an_all_zero_reference_needs_an_all_zero_output():
    ref = torch.zeros(4, 100, dtype=torch.float64)
    assert _foreign(torch.zeros(4, 100), ref, "float32") is None
    reason = _foreign(torch.full((4, 100), 1e-6), ref, "float32")
    assert reason is not None and "the reference is all zero but the output is not (rms 1e-06" in reason


def _softmax64(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


@pytest.fixture(scope="module")
def policy(request):
    from conftest import SOFTMAX

    return load_problem(SOFTMAX).tolerance


def test_policy_accepts_fp32_roundoff(policy):
    x = torch.randn(64, 3000, dtype=torch.float64) * 3
    ref = _softmax64(x)
    out = _softmax64(x.float()).float()  # a correct float32 computation
    tol = policy["float32"]
    assert judge(error_metrics(out, ref, tol.floor, tol.rtol), tol.rtol, tol.min_cosine) is None


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16])
def test_policy_rejects_fp32_problem_computed_in_low_precision(policy, low):
    x = torch.randn(64, 3000, dtype=torch.float64) * 3
    ref = _softmax64(x)
    out = _softmax64(x.to(low).float()).to(low).float()
    tol = policy["float32"]
    reason = judge(error_metrics(out, ref, tol.floor, tol.rtol), tol.rtol, tol.min_cosine)
    assert reason is not None and reason.startswith("max_rel=")


def test_policy_bf16_accepts_rounding_rejects_bf16_exp(policy):
    x = (torch.randn(64, 3000) * 3).to(torch.bfloat16)
    ref = _softmax64(x.double())
    tol = policy["bfloat16"]
    honest = ref.float().to(torch.bfloat16)  # fp32 math, one rounding at the end
    assert judge(error_metrics(honest, ref, tol.floor, tol.rtol), tol.rtol, tol.min_cosine) is None
    d = (x - x.amax(-1, keepdim=True)).to(torch.bfloat16)  # the difference and exp taken in bf16
    e = torch.exp(d)
    shortcut = (e.float() / e.float().sum(-1, keepdim=True)).to(torch.bfloat16)
    assert judge(error_metrics(shortcut, ref, tol.floor, tol.rtol), tol.rtol, tol.min_cosine) is not None


def test_absolute_tolerance_alone_would_be_meaningless():
    """Why the policy is relative: for N = 100000 every softmax value is ~1e-5, so a plain atol of 1e-5 passes zeros."""
    ref = _softmax64(torch.randn(2, 100000, dtype=torch.float64))
    zeros = torch.zeros_like(ref)
    assert (zeros - ref).abs().max() < 1e-3
    m = error_metrics(zeros, ref, floor=1e-30, rtol=1e-4)
    assert m["max_rel"] == pytest.approx(1.0) and m["frac_off"] == 1.0


def compare_mismatches(device: str) -> list:
    """Pairs on which the device comparison (harness/measurer/compare.py) and max_rel_tensor give different figures:
    output dtypes, sizes around the kernel's block, elements below the floor, NaN and infinities."""
    import torch

    from evolve.harness.measurer import compare

    from evolve.harness.shared import metrics
    torch.manual_seed(0)
    wrong = []
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        for n in (1, compare.BLOCK - 1, compare.BLOCK, compare.BLOCK + 1, 3 * compare.BLOCK + 5):
            ref = torch.randn(n, dtype=torch.float64) * 3
            ref[: n // 7] *= 1e-6
            out = (ref * (1 + 1e-3 * torch.randn(n, dtype=torch.float64))).to(dtype)
            for case in ("plain", "nan", "inf", "both inf"):
                o, r = out.clone().to(device), ref.clone().to(device)
                if case == "nan":
                    o[n // 2] = float("nan")
                elif case == "inf":
                    o[-1] = float("inf")
                elif case == "both inf":
                    o[0], r[0] = float("inf"), float("inf")
                for floor in (1e-5, 0.5):
                    worst = torch.zeros(1, dtype=torch.float32, device=device)
                    compare.worst_into(worst, o, r, floor)
                    mine, theirs = float(worst), float(metrics.max_rel_tensor(o, r, floor))
                    if not (mine == theirs or (theirs != theirs and mine == float("inf"))):
                        wrong.append((str(dtype), n, case, floor, mine, theirs))
    return wrong


def test_the_device_comparison_gives_max_rel_figures_under_the_interpreter():
    """Bit for bit the figure of the torch ops it replaces (NaN read as an infinite error), run by Triton's
    interpreter (the kernel's own code, in a process of its own: the interpreter is chosen before Triton loads)."""
    import json
    import subprocess
    import sys

    code = ("import json, sys; sys.path[:0] = sys.argv[1:]; from test_metrics import compare_mismatches; "
            "print(json.dumps(compare_mismatches('cpu')))")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(ROOT), str(ROOT / "tests")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.gpu
def test_the_device_comparison_gives_max_rel_figures_on_the_gpu():
    assert compare_mismatches("cuda") == []


def test_the_whole_output_check_sums_a_chunk_at_a_time_to_the_same_verdict():
    """scale_reason walks a large output in chunks (no float64 copies of the whole of it on the card): the same verdict
    and figures whatever the chunk, for an output that passes, one at twice the scale and one of zeros."""
    from evolve.harness.shared.metrics import scale_reason

    torch.manual_seed(0)
    ref = torch.randn(1000, 37)
    close = ref + 1e-7 * torch.randn(1000, 37)
    for out in (close, 2 * ref, torch.zeros_like(ref)):
        whole = scale_reason(out, ref.double(), 1e-6, 0.99999, chunk=1 << 30)
        for chunk in (7, 4096, 37000):
            assert scale_reason(out, ref.double(), 1e-6, 0.99999, chunk=chunk) == whole
    assert scale_reason(close, ref, 1e-6, 0.99999, chunk=7) is None
    assert "its norm is 2x the reference's" in scale_reason(2 * ref, ref, 1e-6, 0.99999, chunk=7)
    assert "all zeros" in scale_reason(torch.zeros(5), torch.ones(5), 1e-6, 0.99999, chunk=2)
    assert scale_reason(torch.zeros(0), torch.zeros(0), 1e-6, 0.99999) is None


@pytest.mark.parametrize("poison", [None, "nan", "inf"])
def test_the_error_metrics_are_the_same_a_chunk_at_a_time(poison):
    """error_metrics sums a chunk at a time (a large output never has several float64 copies of itself at once): every
    figure as for the whole, the worst element the first largest (a NaN the first NaN) wherever the chunks fall."""
    torch.manual_seed(1)
    ref = torch.randn(300, 41)
    out = ref + 1e-3 * torch.randn(300, 41)
    if poison:
        out[250, 7] = out[290, 1] = float(poison)
    whole = error_metrics(out, ref, 1e-6, 1e-2, chunk=1 << 30)
    for chunk in (1, 7, 4100, 12300):
        part = error_metrics(out, ref, 1e-6, 1e-2, chunk=chunk)
        assert part["worst_index"] == whole["worst_index"] and part["n_off"] == whole["n_off"]
        for key, value in whole.items():
            if isinstance(value, float) and math.isfinite(value):
                assert part[key] == pytest.approx(value, rel=1e-9), key
            elif isinstance(value, float):
                assert math.isnan(value) == math.isnan(part[key]) and (math.isnan(value) or value == part[key]), key
    if poison:
        assert whole["worst_index"] == [250, 7]


def test_the_largest_relative_error_is_the_same_a_chunk_at_a_time():
    """max_rel_tensor walks the output in chunks, each chunk of the reference brought to the output's device (a
    reference computed on the host for a case the card has no room for): the same figure, NaN where out has one."""
    from evolve.harness.shared.metrics import max_rel_tensor

    torch.manual_seed(2)
    ref = torch.randn(97, 13, dtype=torch.float64)
    out = ref.float() + 1e-4 * torch.randn(97, 13)
    whole = float(max_rel_tensor(out, ref, 1e-6, chunk=1 << 30))
    assert whole > 0 and all(float(max_rel_tensor(out, ref, 1e-6, chunk=c)) == whole for c in (1, 10, 500))
    out[96, 12] = float("nan")
    assert math.isnan(float(max_rel_tensor(out, ref, 1e-6, chunk=10)))
    assert float(max_rel_tensor(torch.zeros(0), torch.zeros(0), 1e-6)) == 0.0
