"""The compile rung on a machine without a GPU compiles each launch for Hopper (sm_90a): a kernel that Triton's
compiler refuses there fails the rung, whether the compiler raised a CompilationError or a plain error from one of its
passes, even where the CPU interpreter would run it."""
from pathlib import Path

from evolve.harness import EvalOptions, evaluate

ROOT = Path(__file__).resolve().parents[1]
MATMUL = ROOT / "problems" / "matmul"


def test_a_compiler_pass_that_fails_for_the_card_fails_the_compile_rung(tmp_path):
    # Warp specialization of a K loop over pointer loads: Triton 3.9's pass manager fails on it for sm_90a with a
    # RuntimeError, and the interpreter ignores the option.
    source = (MATMUL / "seeds" / "tiled_dot.py").read_text()
    changed = source.replace("for k0 in range(0, K, BLOCK_K):",
                             "for k0 in tl.range(0, K, BLOCK_K, warp_specialize=True):")
    assert changed != source
    candidate = tmp_path / "warp_specialized.py"
    candidate.write_text(changed)
    verdict = evaluate(candidate, MATMUL, EvalOptions(device="cpu", last_rung="compile"))
    compile_rung = verdict.rung("compile")
    assert compile_rung.status == "failed", compile_rung.reason
    assert compile_rung.reason.startswith("CompilationError:")


def test_the_seed_itself_compiles(tmp_path):
    verdict = evaluate(MATMUL / "seeds" / "tiled_dot.py", MATMUL, EvalOptions(device="cpu", last_rung="compile"))
    assert verdict.rung("compile").status == "ok", verdict.rung("compile").reason
