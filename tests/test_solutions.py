"""Every problem's seeds pass the whole ladder under the CPU interpreter, and every file in problems/*/solutions/ is a
test of the checker: its first line says the verdict it must get."""
import re
from pathlib import Path

import pytest
import torch

from evolve import lang
from evolve.harness import EvalOptions, evaluate

HAS_GPU = torch.cuda.is_available()

ROOT = Path(__file__).resolve().parents[1]
EXPECT = re.compile(r"#\s*expect:\s*(ok|(load|compile|run|correctness|benchmark|roofline):\s*(.+))\s*$")


def solution_files():
    files = sorted(ROOT.glob("problems/*/solutions/*/*.py"))
    return [pytest.param(f, id=f"{f.parents[2].name}/{f.parent.name}/{f.stem}") for f in files]


def seed_files():
    files = sorted(ROOT.glob("problems/*/seeds/*.py"))
    return [pytest.param(f, id=f"{f.parents[1].name}/seeds/{f.stem}") for f in files]


def other_language_files():
    """Seeds and solutions in another language than a problem's first: seeds/<language>/,
    solutions/<kind>/<language>/."""
    files = sorted(ROOT.glob("problems/*/seeds/*/*.py")) + sorted(ROOT.glob("problems/*/solutions/*/*/*.py"))
    return [pytest.param(f, id=str(f.relative_to(ROOT / "problems").with_suffix(""))) for f in files]


def test_every_problem_has_a_seed_and_wrong_solutions():
    for folder in sorted(p for p in (ROOT / "problems").iterdir() if p.is_dir()):
        assert list((folder / "seeds").glob("*.py")), f"{folder.name} has no seed"
        assert list((folder / "solutions" / "wrong").glob("*.py")), f"{folder.name} has no wrong solution"


@pytest.mark.parametrize("path", seed_files())
def test_seed_passes(path, cache_dir):
    verdict = evaluate(path, path.parents[1], EvalOptions(cache_dir=cache_dir))
    assert verdict.ok, [f"{r.name}: {r.reason}" for r in verdict.rungs if r.failed]
    assert verdict.rung("correctness").status == "ok"


def expectation(path: Path):
    match = EXPECT.match(path.read_text().splitlines()[0])
    assert match, f"{path}: first line must be '# expect: ok' or '# expect: <rung>: <reason>'"
    if match.group(1) == "ok":
        return None, None
    return match.group(2), match.group(3).strip().lower()


@pytest.mark.slow  # every solution file of every problem; the seeds above climb the ladder in the quick run
@pytest.mark.parametrize("path", solution_files())
def test_solution_verdict(path, cache_dir):
    rung, reason = expectation(path)
    if path.parent.name == "correct":
        assert rung is None, "files in solutions/correct must expect ok"
    else:
        assert rung is not None, "files in solutions/wrong must expect a failing rung"
    timeout = 25 if reason and "timed out" in reason else 600
    verdict = evaluate(path, path.parents[2], EvalOptions(cache_dir=cache_dir, timeout_s=timeout))
    if rung is None:
        assert verdict.ok, [f"{r.name}: {r.reason}" for r in verdict.rungs if r.failed]
        assert verdict.rung("correctness").status == "ok"
        return
    assert_fails_as_expected(verdict, rung, reason)


def assert_fails_as_expected(verdict, rung, reason):
    assert not verdict.ok
    failed = [r for r in verdict.rungs if r.failed]
    assert len(failed) == 1, failed
    assert failed[0].name == rung, f"failed at {failed[0].name} ({failed[0].reason}), expected {rung}"
    assert reason in failed[0].reason.lower(), failed[0].reason
    after = verdict.rungs[[r.name for r in verdict.rungs].index(rung) + 1:]
    assert all(r.status == "skipped" for r in after)


@pytest.mark.slow
@pytest.mark.parametrize("path", other_language_files())
def test_other_language_file_verdict(path, cache_dir):
    """Where the machine has no GPU, a language without an interpreter reaches only its compile rung: a file expected
    to pass or to fail later must compile, its later rungs skipped for want of a GPU; on a GPU the whole expectation."""
    seed = path.parent.parent.name == "seeds"
    language, problem = path.parent.name, path.parents[2] if seed else path.parents[3]
    rung, reason = (None, None) if seed else expectation(path)
    verdict = evaluate(path, problem, EvalOptions(cache_dir=cache_dir, language=language,
                                                  device="cuda" if HAS_GPU else "cpu"))
    order = [r.name for r in verdict.rungs]
    reachable = order if HAS_GPU or lang.get(language).without_gpu == "interpret" else ["load", "compile"]
    if rung in reachable:
        assert_fails_as_expected(verdict, rung, reason)
        return
    assert all(r.status == "ok" for r in verdict.rungs if r.name in reachable), \
        [f"{r.name}: {r.reason}" for r in verdict.rungs]
    if reachable != order:
        assert all(r.status == "skipped" and "no GPU" in r.reason for r in verdict.rungs if r.name not in reachable)


MATMUL_SEED = ROOT / "problems" / "matmul" / "seeds" / "tma_persistent.py"

# Runs under TRITON_INTERPRET=1 with the harness's interpreter patches, the seed's SM count set to 3 so that each
# persistent program loops over several tiles; prints one line of JSON per launch of matmul_kernel and per failure.
MATMUL_PATHS = r"""
import importlib.util, json, sys
from pathlib import Path
import torch
from evolve.lang.triton.launches import LaunchLog

LaunchLog().install("interpret")
seed, problem = Path(sys.argv[1]), Path(sys.argv[2])
sys.path.insert(0, str(problem))
from reference import generate_input

spec = importlib.util.spec_from_file_location("seed", seed)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.sm_count = lambda: 3
launches = []


class Spy:
    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def launch(*args, **kw):
            M, N, splits = args[4], args[5], args[7]
            units = -(-M // kw["BLOCK_M"]) * -(-N // kw["BLOCK_N"]) * splits
            launches.append({"grid": grid[0], "units": units, "tma": kw["USE_TMA"], "partial": kw["PARTIAL"]})
            return self.kernel[grid](*args, **kw)
        return launch


module.matmul_kernel = Spy(module.matmul_kernel)
default = dict(module.KNOBS)
for setting in json.loads(sys.argv[3]):
    module.KNOBS.clear()
    module.KNOBS.update(default, **setting)
    for M, K, N in json.loads(sys.argv[4]):
        a, b = generate_input(11 + M + K + N, M, K, N)
        out = module.custom_kernel(a, b).double()
        ref = a.double() @ b.double()
        worst = ((out - ref).abs() / ref.abs().clamp(min=0.1)).max().item()
        cosine = torch.nn.functional.cosine_similarity(out.flatten(), ref.flatten(), dim=0).item()
        if worst > 1e-2 or cosine < 0.9999:
            print(json.dumps({"failed": [setting, [M, K, N], worst, cosine]}))
print(json.dumps({"launches": launches}))
"""


def _matmul_seed_run(settings, shapes):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", MATMUL_PATHS, str(MATMUL_SEED), str(MATMUL_SEED.parents[1]),
                           json.dumps(settings), json.dumps(shapes)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert not [line["failed"] for line in lines if "failed" in line]
    return lines[-1]["launches"]


def test_matmul_tma_persistent_seed_paths():
    """The new matmul seed is right on every path its knobs choose: tensor descriptors and masked pointer loads,
    persistent programs that loop over several tiles (3 SMs here) and one program per tile, and the split-K path with
    its float32 partials summed by a second kernel; the problem's tolerance, shapes with K or N not a multiple of 8
    (pointer loads) and multiples (descriptors), M below and above the split-K threshold."""
    settings = [{}, {"PERSISTENT": False}, {"TMA": False}, {"SPLIT_K_MAX_M": 0},
                {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 2},
                {"SPLIT_K": 16, "SPLIT_BLOCK_N": 32, "SPLIT_BLOCK_K": 64}]
    shapes = [[1, 1, 1], [3, 17, 5], [20, 3000, 36], [16, 512, 256], [64, 128, 96], [200, 64, 264], [136, 40, 300],
              [130, 70, 33]]
    launches = _matmul_seed_run(settings, shapes)
    kinds = {(launch["tma"], launch["partial"], launch["units"] > launch["grid"]) for launch in launches}
    # descriptors and pointers each: a persistent loop over several tiles, and split-K partials
    assert {(True, False, True), (False, False, True), (True, True, False), (False, True, False)} <= kinds


@pytest.mark.slow  # compiles the seed's kernels for sm_90a (ptxas), several configurations
def test_matmul_tma_persistent_seed_compiles_for_hopper():
    """Without a GPU, the new matmul seed's benchmark shapes compile for sm_90a as the knobs say: TMA loads
    (cp.async.bulk.tensor) and warpgroup MMAs, cp.async pipelining with TMA off, and with WARP_SPECIALIZE at 4 warps
    a warp-specialized kernel of 12 warps (Triton 3.9's Hopper warp specialization)."""
    import json
    import os
    import subprocess
    import sys

    code = r"""
import importlib.util, json, sys
import torch
from evolve.lang.triton.launches import LaunchLog

log = LaunchLog()
log.install("compile")
spec = importlib.util.spec_from_file_location("seed", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
default, report = dict(module.KNOBS), {}
for name, setting in json.loads(sys.argv[2]).items():
    module.KNOBS.clear()
    module.KNOBS.update(default, **setting)
    log.kernels.clear()
    for M, K, N in [(4096, 4096, 4096), (16, 8192, 8192), (64, 4096, 14336)]:
        module.custom_kernel(torch.empty(M, K, dtype=torch.bfloat16), torch.empty(K, N, dtype=torch.bfloat16))
    report[name] = [{"name": k.metadata.name, "warps": k.metadata.num_warps, "smem": k.metadata.shared,
                     "tma": "cp.async.bulk.tensor" in k.asm["ptx"], "cp_async": "cp.async.cg" in k.asm["ptx"],
                     "wgmma": "wgmma.mma_async" in k.asm["ptx"]} for k in log.kernels.values()]
print(json.dumps(report))
"""
    settings = {"default": {}, "pointers": {"TMA": False},
                "warp_specialized": {"WARP_SPECIALIZE": True, "num_warps": 4}}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "0"}
    done = subprocess.run([sys.executable, "-c", code, str(MATMUL_SEED), json.dumps(settings)], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    big = [k for k in report["default"] if k["name"] == "matmul_kernel" and k["warps"] == 8]
    assert big and all(k["tma"] and k["wgmma"] and k["smem"] <= 227 * 1024 for k in big)
    assert any(k["name"] == "sum_kernel" for k in report["default"])  # the decode shapes split K
    assert all(not k["tma"] for k in report["pointers"]) and any(k["cp_async"] for k in report["pointers"])
    assert any(k["name"] == "matmul_kernel" and k["warps"] == 12 and k["tma"] for k in report["warp_specialized"])
