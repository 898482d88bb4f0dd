"""TileLang, the third candidate language (evolve/lang/tilelang), on a machine without a GPU: its static rules, and
the compile rung, which lowers a kernel to CUDA C and builds real sm_90a code with nvcc while nothing runs."""
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from evolve import lang
from evolve.harness import EvalOptions, evaluate, load_problem
from evolve.harness.runner.static.check import check_source

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "tilelang"


@pytest.fixture
def problem(tmp_path):
    """The mini softmax problem, accepting TileLang candidates too."""
    target = tmp_path / "mini"
    shutil.copytree(ROOT / "tests" / "data" / "mini_softmax", target, symlinks=False)
    toml = target / "problem.toml"
    toml.write_text('languages = ["triton", "tilelang"]\n' + toml.read_text())
    assert tuple(load_problem(target).languages) == ("triton", "tilelang")
    return target


def test_tilelang_is_built_in_and_compiles_without_a_gpu():
    tilelang = lang.get("tilelang")
    assert "tilelang" in lang.names() and tilelang.without_gpu == "compile"
    contract = tilelang.prompt_contract(("torch.softmax",))
    assert "tilelang.compile" in contract and "`torch.softmax`" in contract and "@T.prim_func" in contract
    assert lang.missing(tilelang) is None


def test_the_static_rules_are_tilelangs():
    source = (DATA / "copy_rows.py").read_text()
    assert check_source(source, "copy_rows.py", ("torch.softmax",), language="tilelang") == []
    assert any("imports tilelang" in p for p in check_source(source, "copy_rows.py", language="triton"))
    body = "Y[row, col * BLOCK + i] = X[row, col * BLOCK + i]"
    torch_in_kernel = source.replace(body, "Y[row, col * BLOCK + i] = torch.exp(X[row, col * BLOCK + i])")
    problems = check_source(torch_in_kernel, "k.py", language="tilelang")
    assert any("inside a @T.prim_func or @T.macro function: kernels use tilelang.language" in p for p in problems)
    host = source.replace("    y = torch.empty_like(x)\n", "    y = torch.softmax(x, -1)\n")
    assert any("torch.softmax" in p for p in check_source(host, "k.py", ("torch.softmax",), language="tilelang"))
    for module in ("numpy", "tvm"):  # host compute outside torch's op log; TVM's runtime beside TileLang's
        assert any(f"imports {module}" in p for p in check_source(f"import {module}\n" + source, "k.py",
                                                                   language="tilelang"))


def test_a_candidate_compiles_for_sm_90a_and_its_other_rungs_are_skipped(problem, tmp_path):
    options = EvalOptions(device="cpu", language="tilelang", cache_dir=str(tmp_path / "cache"),
                          dump_dir=str(tmp_path / "dump"))
    verdict = evaluate(DATA / "copy_rows.py", problem, options)
    status = {r.name: r.status for r in verdict.rungs}
    assert status == {"load": "ok", "compile": "ok", "run": "skipped", "correctness": "skipped",
                      "benchmark": "skipped", "roofline": "skipped"}, [(r.name, r.reason) for r in verdict.rungs]
    kernels = verdict.kernels
    assert len(kernels) == 2 and all(k["arch"] == "sm_90a" and k["regs"] and k["spills"] == 0 for k in kernels)
    assert "tilelang has no CPU interpreter" in verdict.rung("run").reason
    assert not verdict.ok and verdict.failure is None
    dumped = {p.name for p in (tmp_path / "dump").iterdir()}
    assert {"00_copy_kernel.cu", "00_copy_kernel.ptx", "00_copy_kernel.cubin", "00_copy_kernel.sass"} <= dumped, dumped
    assert (tmp_path / "dump" / "00_copy_kernel.sass").read_text().startswith("code for sm_90a")
    assert ".target sm_90a" in (tmp_path / "dump" / "00_copy_kernel.ptx").read_text()
    # named as a launch of it is (the __global__ function), which the launch audit compares with what ran
    assert {k["name"] for k in kernels} == {"copy_kernel"}


def test_a_candidate_that_runs_no_kernel_is_told_so(problem, tmp_path):
    options = EvalOptions(device="cpu", language="tilelang", cache_dir=str(tmp_path / "cache"))
    verdict = evaluate(DATA / "launches_nothing.py", problem, options)
    assert verdict.failure is not None and verdict.failure.name == "compile", verdict.rungs
    assert "no TileLang kernel ran in custom_kernel" in verdict.failure.reason


def test_torch_hidden_in_a_kernel_builder_is_refused_statically_and_seen_at_run_time(problem, tmp_path):
    """TileLang runs a @T.prim_func body's Python on the host while it builds the function: torch work there is host
    work, refused by the static check and, without it, seen by the runner's op log."""
    source = (DATA / "torch_in_builder.py").read_text()
    problems = check_source(source.replace("torch.softmax(HIDDEN[\"x\"], -1)", "torch.exp(HIDDEN[\"x\"])"),
                            "k.py", language="tilelang")
    assert problems == ["line 14: uses torch.exp inside a @T.prim_func or @T.macro function: kernels use "
                        "tilelang.language"], problems
    options = EvalOptions(device="cpu", language="tilelang", cache_dir=str(tmp_path / "cache"))
    assert evaluate(DATA / "torch_in_builder.py", problem, options).failure.name == "load"
    verdict = evaluate(DATA / "torch_in_builder.py", problem, replace(options, static_check=False))
    assert verdict.failure is not None and verdict.failure.name == "compile", verdict.rungs
    assert "custom_kernel ran torch ops" in verdict.failure.reason and "_softmax" in verdict.failure.reason


def test_a_tilelang_run_reads_its_own_templates_and_the_shared_rest():
    from evolve.proposer import LLMProposer, ModelSpec, prompt_folders

    folders = prompt_folders(lang.get("tilelang"))
    assert folders[0].name == "tilelang" and (folders[0] / "system.j2").is_file()
    context = {"problem": {"name": "softmax", "description": "Softmax.", "contract": lang.get("tilelang")
                           .prompt_contract(("torch.softmax",)), "notes": ""},
               "device": "NVIDIA H200", "knobs_doc": "", "parent": None, "inspirations": [], "hints": [],
               "error": None, "digest": None, "profile": None}
    messages = LLMProposer([ModelSpec("openai/x")], folders).render("full_rewrite", context)
    assert "You write TileLang kernels" in messages[0]["content"] and "tilelang.compile" in messages[0]["content"]
    assert "```python" in messages[1]["content"]  # the shared full_rewrite.j2


def test_a_tilelang_search_without_a_gpu_is_refused_saying_what_works_here(problem):
    from click.testing import CliRunner

    from evolve.cli import cli

    result = CliRunner().invoke(cli, ["run", str(problem), "--language", "tilelang", "--device", "cpu"])
    assert result.exit_code == 2, result.output
    assert "tilelang has no CPU interpreter" in result.output


def test_a_tilelang_runs_models_search_tilelangs_installed_sources():
    from evolve.knowledge import ContextIndex

    folders = lang.source_folders(lang.get("tilelang"))
    assert [f.name for f in folders] == ["language"]
    hits = ContextIndex(folders).search("reduce_max", 5)
    assert hits, "TileLang's own tilelang/language sources hold reduce_max"


EXAMPLES = sorted((ROOT / "context" / "tilelang" / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_notes_examples_keep_the_rules_and_compile_for_hopper(path, tmp_path, monkeypatch):
    """The context notes' examples are what models copy from: their kernels pass the static check a candidate's do
    (only their check(), which draws inputs with torch, is host code a candidate could not have), and they build for
    sm_90a here, without a GPU."""
    import ast
    import importlib.util

    source = path.read_text()
    tree = ast.parse(source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    kept = "\n".join(source.splitlines()[:check.lineno - 1])
    assert check_source(kept, path.name, language="tilelang") == ["defines no function custom_kernel(*inputs)"]
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    import tilelang

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = tilelang.compile(module.build(333, 781, "float32"), target={"kind": "cuda", "arch": "sm_90a"})
    assert "__global__" in kernel.get_kernel_source()


@pytest.mark.gpu
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_the_notes_examples_match_torch_on_the_card(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.check("cuda") == "ok"


def test_a_second_evaluation_of_a_source_builds_its_kernels_again(problem, tmp_path):
    """No runner's cache outlives its evaluation (harness/shared/compiled.py): a second evaluation of the same bytes
    starts from the state the first did, builds both kernels again, and reads the same figures from them."""
    options = EvalOptions(device="cpu", language="tilelang", cache_dir=str(tmp_path / "cache"))

    def compile_rung(verdict):
        assert verdict.rung("compile").status == "ok", verdict.rungs
        return verdict.rung("compile").metrics

    before = compile_rung(evaluate(DATA / "copy_rows.py", problem, options))
    after = compile_rung(evaluate(DATA / "copy_rows.py", problem, options))
    assert before["fresh"] == after["fresh"] == 2 and before["cache_hits"] == after["cache_hits"] == 0
    assert [(k["regs"], k["spills"]) for k in after["kernels"]] == [(k["regs"], k["spills"]) for k in before["kernels"]]
    assert all(k["regs"] for k in after["kernels"])
    assert not (tmp_path / "cache" / "compiled").exists()


# Compiles a seed's kernels for sm_90a at the given input shapes without running them: tilelang.compile is wrapped to
# name the target (no card to ask) and to hand back a kernel that runs nothing; prints each kernel's CUDA source.
HOPPER_BUILD = r"""
import importlib.util, json, sys
import torch
import tilelang

compile_for_hopper = tilelang.compile
sources = []


def compile_only(func, **kwargs):
    kernel = compile_for_hopper(func, target={"kind": "cuda", "arch": "sm_90a"}, **kwargs)
    sources.append(kernel.get_kernel_source())
    return lambda *args: None


tilelang.compile = compile_only
spec = importlib.util.spec_from_file_location("seed", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
report = []
for call in json.loads(sys.argv[2]):
    inputs = [torch.empty(x, dtype=torch.bfloat16) if isinstance(x, list) else x for x in call]
    before = len(sources)
    module.custom_kernel(*inputs)
    report.append(sources[before:])
print(json.dumps(report))
"""


def _hopper_sources(seed: Path, calls: list, cache: Path) -> list[list[str]]:
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TILELANG_CACHE_DIR": str(cache), "TILELANG_PRINT_ON_COMPILATION": "0"}
    done = subprocess.run([sys.executable, "-c", HOPPER_BUILD, str(seed), json.dumps(calls)], capture_output=True,
                          text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow  # builds seven kernels with nvcc
def test_the_hopper_seeds_lower_to_tma_and_warpgroup_mma_at_the_benchmark_shapes(tmp_path):
    """What context/tilelang/hopper.md says the Hopper seeds compile to, at their default KNOBS: matmul's large tiles
    as TMA loads issued by a producer warp group (384 threads for two consumer warp groups, setmaxnreg between them),
    m64n256k16 wgmma, rasterized order and a TMA store; the decode shapes as 64-row tiles two CTAs an SM, split over K
    with a float32 sum kernel where the tiles are few; attention's q k^T from shared memory and p v with p from
    registers (wgmma_rs), K and V through TMA."""
    import re

    matmul = ROOT / "problems" / "matmul" / "seeds" / "tilelang" / "hopper_gemm.py"
    large, decode, wide = _hopper_sources(matmul, [[[4096, 4096], [4096, 4096]], [[16, 8192], [8192, 8192]],
                                                   [[64, 4096], [4096, 14336]]], tmp_path / "cache")
    assert len(large) == 1 and "__launch_bounds__(384, 1)" in large[0]
    assert all(word in large[0] for word in ("tma_load(", "tma_store(", "warpgroup_reg_alloc<240>",
                                              "rasterization2DRow<8>"))
    assert re.search(r"wgmma_ss<[^>]*kBFloat16, tl::DataType::kFloat32, 64, 256, 16,", large[0])
    assert [re.search(r"void __launch_bounds__\([^)]*\) (\w+)", s).group(1) for s in decode] == [
        "split_k_partial_kernel", "split_k_sum_kernel"]
    assert "__launch_bounds__(256, 2)" in decode[0] and "tma_load(" in decode[0] and "wgmma_ss<" in decode[0]
    assert len(wide) == 1 and "__launch_bounds__(256, 2)" in wide[0] and "tma_load(" in wide[0]

    attention = ROOT / "problems" / "attention" / "seeds" / "tilelang" / "flash_fwd.py"
    [d128], [d64] = _hopper_sources(attention, [[[1, 32, 8192, 128]] * 3 + [True], [[2, 32, 4096, 64]] * 3 + [True]],
                                    tmp_path / "cache")
    for source in (d128, d64):
        assert "__launch_bounds__(384, 1)" in source and "tma_load(K_desc" in source and "tma_load(V_desc" in source
        assert "wgmma_ss<" in source and "wgmma_rs<" in source and "warpgroup_reg_alloc<240>" in source
