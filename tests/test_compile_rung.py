"""The compile rung on a machine without a GPU compiles each launch for Hopper (sm_90a): a kernel the language's
compiler refuses there fails the rung, whether it raised its own compile error or a plain error from one of its passes
(Triton) or from nvcc (TileLang), even where the CPU interpreter would run it."""
from pathlib import Path

import pytest

from evolve.harness import EvalOptions, evaluate

ROOT = Path(__file__).resolve().parents[1]
MATMUL = ROOT / "problems" / "matmul"


@pytest.mark.parametrize("fork_server", [True, False], ids=["forked", "own interpreter"])
def test_a_compiler_pass_that_fails_for_the_card_fails_the_compile_rung(tmp_path, fork_server):
    # Warp specialization of a K loop over pointer loads: Triton 3.9's pass manager fails on it for sm_90a with a
    # RuntimeError, and the interpreter ignores the option.
    source = (MATMUL / "seeds" / "tiled_dot.py").read_text()
    changed = source.replace("for k0 in range(0, K, BLOCK_K):",
                             "for k0 in tl.range(0, K, BLOCK_K, warp_specialize=True):")
    assert changed != source
    candidate = tmp_path / "warp_specialized.py"
    candidate.write_text(changed)
    verdict = evaluate(candidate, MATMUL, EvalOptions(device="cpu", last_rung="compile", fork_server=fork_server))
    compile_rung = verdict.rung("compile")
    assert compile_rung.status == "failed", compile_rung.reason
    assert compile_rung.reason.startswith("CompilationError:")


def test_the_seed_itself_compiles(tmp_path):
    verdict = evaluate(MATMUL / "seeds" / "tiled_dot.py", MATMUL, EvalOptions(device="cpu", last_rung="compile"))
    assert verdict.rung("compile").status == "ok", verdict.rung("compile").reason


@pytest.mark.slow  # nvcc builds several kernels
def test_a_tilelang_kernel_nvcc_refuses_at_one_shape_fails_the_compile_rung(tmp_path):
    # The Hopper seed with TileLang's warp specialization forced on for every shape: at 70x40x300 (rows not 16-byte
    # aligned) nvcc fails with a plain RuntimeError raised inside TileLang, after other shapes compiled.
    pytest.importorskip("tilelang")
    source = (MATMUL / "seeds" / "tilelang" / "hopper_gemm.py").read_text()
    changed = source.replace("persistent, _sm_count(a.device), 1, warp_specialize=tma)(a, b, c)",
                             "persistent, _sm_count(a.device), 1, warp_specialize=True)(a, b, c)")
    assert changed != source
    candidate = tmp_path / "forced.py"
    candidate.write_text(changed)
    verdict = evaluate(candidate, MATMUL, EvalOptions(device="cpu", language="tilelang", last_rung="compile"))
    compile_rung = verdict.rung("compile")
    assert compile_rung.status == "failed", compile_rung.reason
    assert compile_rung.reason.startswith("CompilationError:") and "Command:" not in compile_rung.reason
