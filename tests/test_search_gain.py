"""benchmarks/search_gain.py's copy ceiling: which cases a copy describes, the fractions a copy and a two-pass kernel
reach there, and the most a kernel could gain over the seed at copy rate."""
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

    def time_read(nbytes):
        seen.append(-nbytes)
        return nbytes / peak * 1e3  # a read at the peak

    found = gain.ceilings(rows, time_copy, time_read, peak)
    assert [case for case, _, _, _ in found] == ["fp32 4096x1024"] and seen == [2 * mb, -mb]
    case, copy, two_pass, seed = found[0]
    assert copy == pytest.approx(0.5) and seed == pytest.approx(rows[0]["roofline_fraction"])
    assert two_pass == pytest.approx(0.4)  # bound 2 mb / peak over a copy (4 mb / peak) and a read (mb / peak)
    assert gain.ceilings(rows[:1], lambda nbytes: 1e-9, lambda nbytes: 0.0, peak)[0][1:3] == (1.0, 1.0)
    assert "fp32 4096x1024 0.500 0.400 (0.583)" in gain.ceiling_line("softmax", found)
    assert "no case" in gain.ceiling_line("cross_entropy", gain.ceilings(rows[1:2], time_copy, time_read, peak))


def test_the_room_at_copy_rate_takes_the_higher_of_the_copy_and_the_runs_best_on_each_case(gain):
    seed_rows = [{"case": "a", "roofline_fraction": 0.5}, {"case": "b", "roofline_fraction": 0.8},
                 {"case": "c", "roofline_fraction": 0.9}]
    found = [("a", 0.8, 0.5, 0.5), ("b", 0.7, 0.5, 0.8)]  # c moves no copy's traffic
    room = gain.copy_room(found, {"a": 0.6, "b": 0.88, "c": 0.9}, seed_rows)
    assert room == pytest.approx((0.8 / 0.5 * 0.88 / 0.8 * 1.0) ** (1 / 3))
    assert "at most +20.7% over the seed" in gain.ceiling_line("softmax", found, room)
    assert gain.copy_room(found, {}, seed_rows) is None


def test_the_best_against_torch_line_names_every_case_and_the_geometric_means(gain):
    rows = [{"case": "bf16 4096x4096x4096", "speedup_vs_torch": 0.5, "speedup_vs_compile": 1.0},
            {"case": "bf16 16x8192x8192", "speedup_vs_torch": 2.0, "speedup_vs_compile": None}]
    line = gain.against_torch_line("matmul", rows)
    assert line.startswith("matmul") and "geomean 1.00x/1.00x" in line
    assert "bf16 4096x4096x4096 0.50x/1.00x" in line and "bf16 16x8192x8192 2.00x/-" in line
    assert "geomean -/-" in gain.against_torch_line("matmul", [{"case": "fp32 1x7"}])
