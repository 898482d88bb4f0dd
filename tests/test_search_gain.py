"""benchmarks/search_gain.py's copy ceiling: which cases a copy describes, and the fraction it reaches there."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "search_gain.py"


@pytest.fixture(scope="module")
def gain():
    spec = importlib.util.spec_from_file_location("search_gain", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(case, inputs, written, ms, bound_ms, dtype="float32"):
    """A verdict row as the benchmark rung writes it: inputs described, bytes read and written over ms."""
    size = 2 if dtype == "bfloat16" else 4
    read = sum(size * a * b for a, b in inputs)
    return {"case": case, "inputs": [{"shape": [a, b], "dtype": dtype} for a, b in inputs], "ms": ms,
            "bound_ms": bound_ms, "bytes_per_s": (read + written) / (ms * 1e-3), "roofline_fraction": bound_ms / ms}


def test_only_memory_bound_cases_moving_a_copys_traffic_get_a_ceiling(gain):
    peak = 4e12  # bytes a second
    mb = 4096 * 1024 * 4
    rows = [row("fp32 4096x1024", [(4096, 1024)], mb, ms=0.0144, bound_ms=2 * mb / peak * 1e3),
            row("loss", [(4096, 1024)], 4, ms=0.01, bound_ms=mb / peak * 1e3),  # reads only
            row("matmul", [(4096, 1024)], mb, ms=1.0, bound_ms=0.8),  # bound by its flops
            {"case": "unknown", "inputs": [{"shape": [4], "dtype": "not_a_dtype"}], "ms": 1.0, "bound_ms": 1e-5,
             "bytes_per_s": 4 / 1e-3, "roofline_fraction": 1e-5}]
    seen = []

    def time_copy(nbytes):
        seen.append(nbytes)
        return 2 * nbytes / peak * 1e3  # a copy at half the peak

    found = gain.ceilings(rows, time_copy, peak)
    assert [case for case, _, _ in found] == ["fp32 4096x1024"] and seen == [2 * mb]
    case, copy, seed = found[0]
    assert copy == pytest.approx(0.5) and seed == pytest.approx(rows[0]["roofline_fraction"])
    assert gain.ceilings(rows[:1], lambda nbytes: 1e-9, peak)[0][1] == 1.0  # never above the roofline
    assert "fp32 4096x1024 0.500 (0.583)" in gain.ceiling_line("softmax", found)
    assert "no case" in gain.ceiling_line("cross_entropy", gain.ceilings(rows[1:2], time_copy, peak))
