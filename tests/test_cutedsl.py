"""CuTeDSL, the second candidate language (evolve/lang/cutedsl), on a machine without a GPU: its static rules, and the
compile rung, which builds real sm_90a code through the DSL's own compiler while nothing runs."""
import shutil
from pathlib import Path

import pytest

from evolve import lang
from evolve.harness import EvalOptions, evaluate, load_problem
from evolve.harness.runner.static.check import check_source

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cutedsl"


@pytest.fixture
def problem(tmp_path):
    """The mini softmax problem, accepting CuTeDSL candidates too."""
    target = tmp_path / "mini"
    shutil.copytree(ROOT / "tests" / "data" / "mini_softmax", target, symlinks=False)
    return accepting_cutedsl(target)


def accepting_cutedsl(folder: Path) -> Path:
    """The problem folder, its problem.toml accepting CuTeDSL candidates (after Triton) if it does not already."""
    toml = folder / "problem.toml"
    if "cutedsl" not in load_problem(folder).languages:
        toml.write_text('languages = ["triton", "cutedsl"]\n' + toml.read_text())
    return folder


def test_the_dsls_own_enum_members_pass_the_static_check():
    """CUTLASS's usual spellings hand enum members to DSL calls (the pipeline's user type, the MMA's accumulate
    field), as the tensor-core seed does: an enum member computes none of its attributes and takes no item assignment,
    so it is a plain value to the check, however Python's EnumType looks (3.11's has a __getattr__); a library module
    handed on the same way stays refused."""
    seed = (ROOT / "problems" / "matmul" / "seeds" / "cutedsl" / "wgmma_tma.py").read_text()
    assert seed.count("tiled_mma.set(warpgroup.Field.ACCUMULATE") == 2 and "PipelineUserType.Producer" in seed
    assert check_source(seed, "wgmma_tma.py", language="cutedsl") == []
    module_handed_on = seed.replace("tiled_mma.set(warpgroup.Field.ACCUMULATE, True)",
                                    "tiled_mma.set(cutlass.cute.nvgpu.warpgroup, True)")
    assert any("hands the module cutlass.cute.nvgpu.warpgroup" in p
               for p in check_source(module_handed_on, "wgmma_tma.py", language="cutedsl"))


def test_cutedsl_is_built_in_and_compiles_without_a_gpu():
    cutedsl = lang.get("cutedsl")
    assert "cutedsl" in lang.names() and cutedsl.without_gpu == "compile"
    assert "cute.compile" in cutedsl.prompt_contract(("torch.softmax",)) and "`torch.softmax`" in \
        cutedsl.prompt_contract(("torch.softmax",))
    assert set(cutedsl.artifact_kinds) == {"sass", "ptx"}


def test_the_static_rules_are_the_dsls():
    source = (DATA / "copy_rows.py").read_text()
    assert check_source(source, "copy_rows.py", ("torch.softmax",), language="cutedsl") == []
    assert any("imports cutlass" in p for p in check_source(source, "copy_rows.py", language="triton"))
    torch_in_kernel = source.replace("gy[i // n, i % n] = gx[i // n, i % n]", "gy[0, 0] = torch.exp(gx[0, 0])")
    problems = check_source(torch_in_kernel, "k.py", language="cutedsl")
    assert any("inside a @cute.jit or @cute.kernel function: kernels use cutlass.cute" in p for p in problems)
    host = source.replace("    y = torch.empty_like(x)\n", "    y = torch.softmax(x, -1)\n")
    assert any("torch.softmax" in p for p in check_source(host, "k.py", ("torch.softmax",), language="cutedsl"))
    numpy = "import numpy\n" + source
    assert any("imports numpy" in p for p in check_source(numpy, "k.py", language="cutedsl"))


BLOCK_SUM = """
import cutlass
import cutlass.cute as cute
from cutlass import Float32


@cute.jit
def block_sum(val: Float32, slots: cute.Tensor, num_warps: cutlass.Constexpr[int]) -> Float32:
{bind}    val = cute.arch.warp_reduction(val, lambda a, b: a + b)
    if {test}:
        slots[{warp}] = val
    cute.arch.barrier()
    total = slots[0]
    for w in cutlass.range_constexpr(1, num_warps):
        total = total + slots[w]{loop}
    return total


def custom_kernel(x):
    return x
"""


@pytest.mark.parametrize("bind, test, warp, loop, refused", [
    # the form that hung on an H100: warp_idx's full-warp shuffle reached by lane 0 alone
    ("", "cute.arch.lane_idx() == 0", "cute.arch.warp_idx()", "", True),
    ("", "cute.arch.lane_idx() == 0", "0 if cute.arch.lane_idx() else cute.arch.warp_idx()", "", True),
    ("", "cute.arch.lane_idx() == 0", "0", " + (cute.arch.warp_idx() if w else 0)", True),
    ("    lane, warp = cute.arch.lane_idx(), cute.arch.warp_idx()\n", "lane == 0", "warp", "", False),
    ("", "cutlass.const_expr(num_warps > 1)", "cute.arch.warp_idx()", "", False),  # decided while tracing
    ("", "cute.arch.lane_idx() == 0", "0", " + cute.arch.warp_idx() * 0", False),  # an unrolled loop
])
def test_a_warp_index_taken_where_some_lanes_cannot_reach_it_is_refused(bind, test, warp, loop, refused):
    source = BLOCK_SUM.format(bind=bind, test=test, warp=warp, loop=loop)
    problems = check_source(source, "block_sum.py", language="cutedsl")
    hang = [p for p in problems if "cutlass.cute.arch.warp_idx inside a runtime if, while or for" in p]
    assert bool(hang) == refused, problems
    assert not [p for p in problems if p not in hang]
    if refused:
        assert "the kernel hangs" in hang[0] and "warp = cute.arch.warp_idx()" in hang[0]


def test_a_candidate_compiles_for_sm_90a_and_its_other_rungs_are_skipped(problem, tmp_path):
    options = EvalOptions(device="cpu", language="cutedsl", cache_dir=str(tmp_path / "cache"),
                          dump_dir=str(tmp_path / "dump"))
    verdict = evaluate(DATA / "copy_rows.py", problem, options)
    status = {r.name: r.status for r in verdict.rungs}
    assert status == {"load": "ok", "compile": "ok", "run": "skipped", "correctness": "skipped",
                      "benchmark": "skipped", "roofline": "skipped"}, [(r.name, r.reason) for r in verdict.rungs]
    kernels = verdict.kernels
    assert len(kernels) == 2 and all(k["arch"] == "sm_90a" and k["regs"] for k in kernels)  # a shape each
    assert "cutedsl has no CPU interpreter" in verdict.rung("run").reason
    assert not verdict.ok and verdict.failure is None
    dumped = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert {"00_copy.ptx", "00_copy.cubin", "00_copy.sass"} <= set(dumped)
    assert (tmp_path / "dump" / "00_copy.sass").read_text().startswith("code for sm_90a")


def test_a_candidate_that_runs_no_kernel_is_told_so(problem, tmp_path):
    options = EvalOptions(device="cpu", language="cutedsl", cache_dir=str(tmp_path / "cache"))
    verdict = evaluate(DATA / "launches_nothing.py", problem, options)
    assert verdict.failure is not None and verdict.failure.name == "compile", verdict.rungs
    assert "no CuTeDSL kernel ran in custom_kernel" in verdict.failure.reason


def test_a_cutedsl_run_reads_its_own_templates_and_the_shared_rest():
    from evolve.proposer import LLMProposer, ModelSpec, prompt_folders

    folders = prompt_folders(lang.get("cutedsl"))
    assert folders[0].name == "cutedsl" and (folders[0] / "system.j2").is_file()
    context = {"problem": {"name": "softmax", "description": "Softmax.", "contract": lang.get("cutedsl")
                           .prompt_contract(("torch.softmax",)), "notes": ""},
               "device": "NVIDIA H200", "knobs_doc": "", "parent": None, "inspirations": [], "hints": [],
               "error": None, "digest": None, "profile": None}
    messages = LLMProposer([ModelSpec("openai/x")], folders).render("full_rewrite", context)
    assert "You write CuTeDSL kernels" in messages[0]["content"] and "cute.compile" in messages[0]["content"]
    assert "```python" in messages[1]["content"]  # the shared full_rewrite.j2


def test_torch_hidden_in_a_launcher_is_refused_statically_and_seen_at_run_time(problem, tmp_path):
    """The DSL runs a @cute.jit function's Python on the host while it compiles: torch work there is host work."""
    from dataclasses import replace

    source = (DATA / "torch_in_launcher.py").read_text()
    problems = check_source(source, "torch_in_launcher.py", ("torch.softmax",), language="cutedsl")
    assert problems and all(p.startswith("line 24:") for p in problems), problems  # the launcher's torch line
    options = EvalOptions(device="cpu", language="cutedsl", cache_dir=str(tmp_path / "cache"))
    assert evaluate(DATA / "torch_in_launcher.py", problem, options).failure.name == "load"
    verdict = evaluate(DATA / "torch_in_launcher.py", problem, replace(options, static_check=False))
    assert verdict.failure is not None and verdict.failure.name == "compile", verdict.rungs
    assert "custom_kernel ran torch ops" in verdict.failure.reason and "_softmax" in verdict.failure.reason


SMEM = '''import cutlass
import cutlass.cute as cute
from cutlass import Float32
from cutlass.memory import SmemAllocator


@cute.kernel
def k(g: cute.Tensor):
    buf = SmemAllocator().allocate_tensor(Float32, cute.make_layout((4,)), byte_alignment=16)
    buf[0] = Float32(0.0)
    WRITE


def custom_kernel(x):
    return x
'''


def test_a_buffer_made_from_a_dsl_type_may_be_written_the_type_may_not():
    """A library call's result may be any of its arguments, so a shared-memory buffer allocated for Float32 may be the
    class Float32 as far as the check can tell: an item written into it cannot change a class whose metaclass has no
    __setitem__ (it would raise), while an attribute written is a write into the library."""
    assert check_source(SMEM.replace("    WRITE\n", ""), "k.py", language="cutedsl") == []
    problems = check_source(SMEM.replace("WRITE", "buf.reduce = None"), "k.py", language="cutedsl")
    assert any("assigns into cutlass.Float32" in p for p in problems), problems


@pytest.mark.parametrize("kernel", ["softmax/seeds/cutedsl/cluster_rows.py",
                                    "rmsnorm/seeds/cutedsl/rmsnorm_rows.py", "matmul/seeds/cutedsl/matmul_simple.py",
                                    "matmul/seeds/cutedsl/wgmma_tma.py"])
def test_the_kernels_compile_for_every_test_case(kernel, tmp_path):
    """The shipped CuTeDSL kernels for softmax (a row kept in registers across a thread-block cluster), rmsnorm and
    matmul against each problem's test cases: every shape and dtype compiled for sm_90a, with no spill."""
    problem_name = kernel.split("/")[0]
    verdict = evaluate(ROOT / "problems" / kernel, ROOT / "problems" / problem_name,
                       EvalOptions(device="cpu", language="cutedsl", cache_dir=str(tmp_path / "cache")))
    assert verdict.rung("compile").ok, [(r.name, r.reason) for r in verdict.rungs]
    assert verdict.kernels and len(verdict.kernels) <= len(load_problem(ROOT / "problems" / problem_name).tests)
    assert all(k["arch"] == "sm_90a" and k["spills"] == 0 for k in verdict.kernels)


TENSOR_CORE_SEED = ROOT / "problems" / "matmul" / "seeds" / "cutedsl" / "wgmma_tma.py"

# Compiles the seed for sm_90a (nothing runs) on the matmul benchmark shapes and a fallback shape, per knob setting;
# prints per setting, per compiled kernel, what its SASS holds.
TENSOR_CORE_SASS = r"""
import importlib.util, json, re, sys
from pathlib import Path
import torch
from evolve.harness.runner.sass import read_cubin
from evolve.lang.cutedsl.runner_side import RunnerSide

side = RunnerSide("compile")
spec = importlib.util.spec_from_file_location("seed", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
default, report, work = dict(module.KNOBS), {}, Path(sys.argv[3])
for name, setting in json.loads(sys.argv[2]).items():
    module.KNOBS.clear()
    module.KNOBS.update(default, **setting)
    side.kernels.clear()
    for M, K, N in [(4096, 4096, 4096), (16, 8192, 8192), (130, 70, 33)]:
        module.custom_kernel(torch.empty(M, K, dtype=torch.bfloat16), torch.empty(K, N, dtype=torch.bfloat16))
    report[name] = []
    for index, (key, kernel) in enumerate(side.kernels.items()):
        read = read_cubin(side._artifacts(kernel)["cubin"], work / f"{name}{index}.cubin", sass=True)
        count = lambda pattern: len(re.findall(pattern, read["sass"]))
        report[name].append({"name": key.split("/")[0], "spills": read["local_bytes"], "hgmma": count(r"HGMMA"),
                             "arrive": count(r"WARPGROUP\.ARRIVE"), "tma_load": count(r"UTMALDG"),
                             "multicast": count(r"UTMALDG\.2D\.MULTICAST"), "tma_store": count(r"UTMASTG")})
print(json.dumps(report))
"""


@pytest.mark.slow  # compiles five kernels for sm_90a in a fresh process (about 20 s on two cores)
def test_the_tensor_core_matmul_seed_compiles_to_wgmma_fed_by_tma(tmp_path):
    """The Hopper matmul seed's benchmark shapes compile for sm_90a to what its docstring says: warpgroup MMAs (HGMMA)
    that ptxas did not serialize (one WARPGROUP.ARRIVE per k-tile's group of HGMMAs, not one per HGMMA: a serialized
    kernel waits for each MMA before the next), TMA loads and a TMA store, multicast loads with a cluster, no spills;
    and the fallback for K or N not a multiple of 8 without tensor cores."""
    import json
    import os
    import subprocess
    import sys

    from evolve.harness.runner.sass import tool

    if not tool("cuobjdump"):
        pytest.skip("no cuobjdump here to read the SASS with (Triton's wheel bundles one)")
    settings = {"default": {}, "cluster": {"CLUSTER_M": 2}}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUTE_DSL_ARCH": "sm_90a", "CUTE_DSL_KEEP": "ptx,cubin",
           "CUTE_DSL_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", TENSOR_CORE_SASS, str(TENSOR_CORE_SEED), json.dumps(settings),
                           str(tmp_path)], capture_output=True, text=True, env=env, timeout=600,
                          cwd=tmp_path)  # CUTE_DSL_KEEP writes the kept PTX and cubin into the working folder
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    for name, kernels in report.items():
        tma = [k for k in kernels if k["name"] == "_gemm_tma"]
        assert len(tma) == 2, kernels  # 128 x 256 tiles for M = 4096, 64-row tiles for M = 16
        assert all(k["hgmma"] and k["arrive"] < k["hgmma"] and k["tma_load"] and k["tma_store"] for k in tma), kernels
        assert all(k["spills"] == 0 for k in kernels), kernels
        assert [k["hgmma"] for k in kernels if k["name"] == "_gemm_simple"] == [0], kernels
    assert all(k["multicast"] for k in report["cluster"] if k["name"] == "_gemm_tma")
    assert not any(k["multicast"] for k in report["default"])


@pytest.mark.gpu
def test_the_tensor_core_matmul_seed_matches_torch_on_the_card():
    """The seed's own check on the card: every path it takes (a K tail through TMA, partial tiles, clusters, other
    tile shapes, small M, the fallback) against torch."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(TENSOR_CORE_SEED)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (done.stdout + done.stderr)[-3000:]


def test_a_cutedsl_runs_models_search_the_dsls_installed_sources():
    from evolve.knowledge import ContextIndex

    folders = lang.source_folders(lang.get("cutedsl"))
    assert [f.name for f in folders] == ["cute", "utils", "pipeline", "memory"]
    assert lang.source_folders(lang.get("triton")) == []
    index = ContextIndex(folders)
    hits = index.search("warp_reduction", 5)
    assert any(h.path.startswith("cute/arch/") for h in hits), [h.path for h in hits]


def test_a_cutedsl_search_without_a_gpu_is_refused_saying_what_works_here(problem):
    """A search ranks measured kernels; without a GPU a CuTeDSL kernel is only compiled, so `evolve run` says so at
    once (and what does work here) instead of running a search that can rank nothing."""
    from click.testing import CliRunner

    from evolve.cli import cli

    result = CliRunner().invoke(cli, ["run", str(problem), "--language", "cutedsl", "--device", "cpu"])
    assert result.exit_code == 2, result.output
    assert "cutedsl has no CPU interpreter" in result.output and "--language cutedsl compiles" in result.output


def test_a_language_whose_package_is_missing_says_what_to_install():
    from dataclasses import replace

    assert lang.missing(lang.get("cutedsl")) is None and lang.missing(lang.get("triton")) is None
    absent = lang.missing(replace(lang.get("cutedsl"), requires=("cutlass_not_installed_here",)))
    assert "cutlass_not_installed_here, which is not installed here: pip install 'evolve[cutedsl]'" in absent


@pytest.mark.parametrize("inside, message", [
    ("cutlass.torch.matrix(1, 4, 4, False, cutlass.Float32)", "uses cutlass.torch.matrix inside a @cute.jit"),
    ("cutlass.testing.benchmark(copy_kernel)", "uses cutlass.testing.benchmark inside a @cute.jit"),
    ("mx.__class__", "dunder attribute __class__"),
])
def test_a_launcher_may_name_only_the_dsls_kernel_modules(inside, message):
    """What the DSL traces on the host at compile time is judged as kernel code: its host helpers (torch interop,
    benchmarking), which compute outside any kernel, are refused there."""
    source = (DATA / "copy_rows.py").read_text().replace(
        "    m, n = mx.shape\n    copy_kernel(mx, my)",
        f"    m, n = mx.shape\n    _ = {inside}\n    copy_kernel(mx, my)")
    assert inside in source
    problems = check_source(source, "k.py", language="cutedsl")
    assert any(message in p for p in problems), problems


EXAMPLES = sorted((ROOT / "context" / "cutedsl" / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_notes_examples_keep_the_rules_a_candidate_keeps(path):
    """The context notes' examples are what models copy from: their kernels and launchers pass the static check a
    candidate's do (only their check(), which draws inputs with torch, is host code a candidate could not have)."""
    import ast

    source = path.read_text()
    tree = ast.parse(source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    kept = "\n".join(source.splitlines()[:check.lineno - 1])
    problems = check_source(kept, path.name, language="cutedsl")
    assert problems == ["defines no function custom_kernel(*inputs)"], problems


@pytest.mark.gpu
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_notes_examples_match_torch_on_the_card(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.check("cuda") == "ok"


def test_check_problem_compiles_another_languages_files_where_it_cannot_run_them(problem):
    """seeds/cutedsl and solutions/*/cutedsl are checked in their language: without a GPU they must compile, a wrong
    one expected to fail later is compiled only (said, not faulted), and one that does not compile is a fault."""
    from evolve.problems import check_problem

    root = Path(__file__).resolve().parents[1] / "problems" / "softmax"
    (problem / "seeds" / "cutedsl").mkdir(parents=True)
    shutil.copy(root / "seeds" / "cutedsl" / "cluster_rows.py", problem / "seeds" / "cutedsl")
    (problem / "solutions" / "wrong" / "cutedsl").mkdir(parents=True)
    wrong = problem / "solutions" / "wrong" / "cutedsl"
    shutil.copy(root / "solutions" / "wrong" / "cutedsl" / "missing_tail.py", wrong)
    shutil.copy(root / "solutions" / "wrong" / "syntax_error.py", problem / "solutions" / "wrong")  # Triton's own
    said: list = []
    assert check_problem(problem, device="cpu", progress=said.append) == []
    assert "seeds/cutedsl/cluster_rows.py: evaluating" in said and \
        "solutions/wrong/cutedsl/missing_tail.py: evaluating" in said, said
    (problem / "seeds" / "cutedsl" / "broken.py").write_text(DATA.joinpath("copy_rows.py").read_text().replace(
        "gy[i // n, i % n] = gx[i // n, i % n]", "gy[i // n, i % n] = gx[i // n, i % n] + undefined_name"))
    faults = check_problem(problem, device="cpu")
    assert len(faults) == 1 and faults[0].startswith("seeds/cutedsl/broken.py: must pass and fails at load"), faults


def test_an_evaluation_in_a_language_not_installed_here_says_what_to_install(tmp_path, monkeypatch):
    """Not 'the static check could not judge the file (ModuleNotFoundError ...)': the load rung names the package."""
    from dataclasses import replace

    import evolve.lang.cutedsl as cutedsl_language

    monkeypatch.setattr(cutedsl_language, "LANGUAGE",
                        replace(cutedsl_language.LANGUAGE, requires=("cutlass_not_installed_here",)))
    seed = next((ROOT / "problems" / "softmax" / "seeds" / "cutedsl").glob("*.py"))
    verdict = evaluate(seed, ROOT / "problems" / "softmax",
                       EvalOptions(device="cpu", language="cutedsl", cache_dir=str(tmp_path)))
    assert verdict.rung("load").failed
    assert "cutlass_not_installed_here, which is not installed here: pip install" in verdict.rung("load").reason


def test_eval_without_language_takes_it_from_the_files_imports():
    """`evolve eval` of a CuTeDSL file without --language was refused by Triton's import rule with no hint; the
    language whose package the file imports is taken where the problem accepts it, and said."""
    from test_run import evolve

    seed = ROOT / "problems" / "softmax" / "seeds" / "cutedsl" / "cluster_rows.py"
    result = evolve("eval", seed, ROOT / "problems" / "softmax", "--device", "cpu")
    assert "evaluated as cutedsl" in result.stderr, result.stderr[-2000:]
    assert "[compile]     ok" in result.stdout and " failed " not in result.stdout, result.stdout
    assert result.returncode == 1  # compiled, not benchmarked: no GPU here (eval's --help says so)
    triton_file = (ROOT / "problems" / "softmax" / "seeds" / "softmax_rows.py").read_text()
    assert lang.named_by_imports(triton_file, ["triton", "cutedsl", "tilelang"]) == "triton"
    assert lang.named_by_imports("import triton\nimport cutlass\n", ["triton", "cutedsl"]) is None  # both: the default
    assert lang.named_by_imports(seed.read_text(), ["triton"]) is None  # a problem that takes no CuTeDSL
