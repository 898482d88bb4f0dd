"""Shape-dispatch composition: the rule learned from per-case figures, the merged source, and the composer in the
search loop (one real evaluation under the Triton interpreter; the rest with a fake evaluator on a real archive)."""
import ast
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from evolve import compose
from evolve.archive import Archive
from evolve.config import RunConfig
from evolve.harness import EvalOptions
from evolve.scoring import noise_of, score_of
from evolve.search import Search, device_name
from verdicts import ladder

ROOT = Path(__file__).resolve().parents[1]
TWO = ROOT / "tests" / "data" / "two_regimes"
ROWS_SRC = ROOT / "tests" / "data" / "mini_softmax" / "seeds" / "softmax_rows.py"  # one row per program (KNOBS)
MULTI_SRC = ROOT / "problems" / "softmax" / "solutions" / "correct" / "multi_row.py"  # several rows per program
SINGLE_SRC = ROOT / "problems" / "softmax" / "solutions" / "correct" / "single_block.py"

N = ("size", 0, 1)  # the row length of input 0


def kernel_source(name: str) -> str:
    """A tiny kernel module that says which kernel ran; module-level names collide across kernels on purpose."""
    return f"import torch\n\nNAME = {name!r}\n\n\ndef custom_kernel(x):\n    return NAME\n"


def cases(ns, dtype="float32", rows=4):
    return [compose.Case(label=f"{dtype} {rows}x{n}", features={("size", 0, 0): rows, N: n, ("dtype", 0): dtype})
            for n in ns]


def part(pid, values: dict, source=None) -> compose.Part:
    return compose.Part(pid, source or kernel_source(f"k{pid}"), values)


def crossing(cs, fast_until: int, a=1, b=2):
    """Kernel a is twice as fast as b for rows up to `fast_until`, b twice as fast as a beyond."""
    return {a: part(a, {c.label: 2.0 if c.features[N] <= fast_until else 1.0 for c in cs}),
            b: part(b, {c.label: 1.0 if c.features[N] <= fast_until else 2.0 for c in cs})}


# --- the rule ---------------------------------------------------------------------------------------------------

def test_thresholds_lie_geometrically_between_the_benchmark_values_and_route_unseen_shapes():
    cs = cases([256, 1024, 4096, 16384])
    benchmark_values = {256, 1024, 4096, 16384}

    tree, _ = compose.learn(cs, crossing(cs, 1024))
    assert isinstance(tree, compose.Split)
    assert tree.feature == N and tree.test == 2048
    assert 1024 < tree.test < 4096 and tree.test not in benchmark_values
    assert (tree.left, tree.right) == (compose.Leaf(1), compose.Leaf(2))
    assert [compose.route(tree, c) for c in cs] == [1, 1, 2, 2]
    unseen = {n: cases([n])[0] for n in (16, 3000, 100000)}
    assert compose.route(tree, unseen[16]) == 1
    assert compose.route(tree, unseen[3000]) == 2  # above 2048
    assert compose.route(tree, unseen[100000]) == 2

    moved, _ = compose.learn(cs, crossing(cs, 4096))
    assert isinstance(moved, compose.Split) and moved.feature == N and moved.test == 8192
    assert compose.route(moved, unseen[16]) == 1
    assert compose.route(moved, unseen[3000]) == 1  # below 8192 now
    assert compose.route(moved, unseen[100000]) == 2


def test_a_composite_of_one_kernel_is_never_proposed():
    cs = cases([256, 1024, 4096, 16384])
    # one kernel fastest everywhere
    everywhere = {1: part(1, {c.label: 3.0 for c in cs}), 2: part(2, {c.label: 1.0 for c in cs})}
    assert compose.plan(list(everywhere.values()), cs, None, 0.02) is None

    # the winners differ, but a split would gain less than MIN_GAIN
    tiny = 1 + compose.MIN_GAIN / 4
    close = {1: part(1, {c.label: tiny if c.features[N] <= 1024 else 1.0 for c in cs}),
             2: part(2, {c.label: 1.0 if c.features[N] <= 1024 else tiny for c in cs})}
    winners = {max(close.values(), key=lambda p: p.value[c.label]).id for c in cs}
    assert winners == {1, 2}
    assert isinstance(compose.learn(cs, close)[0], compose.Leaf)
    assert compose.plan(list(close.values()), cs, None, 0.02) is None

    # a worthwhile rule whose predicted geomean (2.0) does not beat the incumbent by more than the noise
    worth = crossing(cs, 1024)
    assert compose.plan(list(worth.values()), cs, 2.0, 0.02) is None
    assert compose.plan(list(worth.values()), cs, 1.97, 0.02) is None  # 2.0 <= 1.97 * 1.02
    assert compose.plan(list(worth.values()), cs, 1.9, 0.10) is None  # 2.0 <= 1.9 * 1.10

    found = compose.plan(list(worth.values()), cs, 1.9, 0.02)
    assert found is not None
    assert sorted(found.parts) == [1, 2]
    assert math.isclose(found.predicted, 2.0)
    assert found.chosen == {c.label: 1 if c.features[N] <= 1024 else 2 for c in cs}
    assert "inputs[0].shape[1] <= 2048" in found.source
    # the composite runs: the module-level NAME of each kernel survives under its own suffix, the rule routes
    namespace = {}
    exec(compile(found.source, "<composite>", "exec"), namespace)
    assert namespace["NAME_c1"] == "k1" and namespace["NAME_c2"] == "k2"
    kernel = namespace["custom_kernel"]
    assert kernel(torch.empty(2, 16)) == "k1"
    assert kernel(torch.empty(2, 2048)) == "k1"
    assert kernel(torch.empty(2, 2049)) == "k2"
    assert kernel(torch.empty(1, 100000)) == "k2"


def test_a_regime_of_one_case_that_takes_three_splits_to_reach_goes_to_its_kernel():
    """LayerNorm on the H100: the seed leads eleven of twelve cases; a multi-row kernel is 28% faster on bf16
    4096x16384 alone and a little slower on the rest. Reaching that case takes three cuts (dtype, rows, columns), none
    of which gains anything before the last; the rule gains 2.1% of the geometric mean, so a composite is worth it."""
    shapes = [(4096, 2048), (4096, 4096), (4096, 8192), (4096, 16384), (32768, 4096), (1024, 32768)]
    cs = [compose.Case(label=f"{dtype} {rows}x{n}", features={("size", 0, 0): rows, N: n, ("dtype", 0): dtype})
          for dtype in ("float32", "bfloat16") for rows, n in shapes]
    target = "bfloat16 4096x16384"
    seed = part(1, {c.label: 0.685 if c.label == target else 0.85 for c in cs})
    multi = part(2, {c.label: 0.878 if c.label == target else 0.83 for c in cs})
    tree, loss = compose.learn(cs, {1: seed, 2: multi})
    assert {c.label: compose.route(tree, c) for c in cs} == {c.label: 2 if c.label == target else 1 for c in cs}
    seed_alone = math.exp(sum(math.log(seed.value[c.label]) for c in cs) / len(cs))
    assert math.exp(-loss / len(cs)) > seed_alone * 1.02
    found = compose.plan([seed, multi], cs, seed_alone, 0.02)
    assert found is not None and sorted(found.parts) == [1, 2]


LAYERNORM_CASES = ["fp32 4096x2048", "bf16 4096x2048", "fp32 4096x4096", "bf16 4096x4096", "fp32 4096x8192",
                   "bf16 4096x8192", "fp32 4096x16384", "bf16 4096x16384", "fp32 32768x4096", "bf16 32768x4096",
                   "fp32 1024x32768", "bf16 1024x32768"]
LAYERNORM_FIGURES = {  # a 5-minute embedded layernorm run on an H100: the seed, multi_row, a tuned seed at 2x warps
    1: [0.793, 0.709, 0.873, 0.813, 0.903, 0.864, 0.930, 0.694, 0.956, 0.945, 0.725, 0.774],
    2: [0.801, 0.680, 0.877, 0.795, 0.903, 0.869, 0.924, 0.903, 0.957, 0.948, 0.718, 0.771],
    25: [0.822, 0.708, 0.887, 0.769, 0.914, 0.886, 0.933, 0.687, 0.960, 0.884, 0.853, 0.803]}


def test_a_rule_over_a_best_alone_that_is_not_the_searchs_best_is_weighed_against_what_the_search_holds():
    """The run above held the seed (0.827): multi_row (0.841) was within the noise of it. Over multi_row alone, the
    tuned seed's regime (fp32, 18% faster on 1024x32768) raises the geometric mean 1.9%, under MIN_GAIN, and no rule
    came of it in 36 candidates; over the seed the search holds, the same rule gains 3.7%, and is worth a try."""
    cs = [compose.Case(label=label, features={("size", 0, 0): int(label.split()[1].split("x")[0]),
                                              N: int(label.split("x")[1]),
                                              ("dtype", 0): "float32" if label.startswith("fp32") else "bfloat16"})
          for label in LAYERNORM_CASES]
    parts = {pid: part(pid, dict(zip(LAYERNORM_CASES, values))) for pid, values in LAYERNORM_FIGURES.items()}
    alone = {pid: math.exp(sum(map(math.log, values)) / len(values)) for pid, values in LAYERNORM_FIGURES.items()}
    assert compose.learn(cs, parts)[0] == compose.Leaf(2)  # the best alone is multi_row
    assert compose.learn(cs, parts, held=alone[2])[0] == compose.Leaf(2)  # held by the search: nothing to gain
    tree, loss = compose.learn(cs, parts, held=alone[1])
    assert sorted(compose.leaves(tree)) == [2, 25]
    assert alone[2] * 1.02 > math.exp(-loss / len(cs)) > alone[1] * 1.03
    found = compose.plan(list(parts.values()), cs, alone[1], 0.02)
    assert found is not None and sorted(found.parts) == [2, 25]
    assert compose.plan(list(parts.values()), cs, alone[2], 0.02) is None


def test_kernels_alike_but_for_noise_give_no_rule_where_the_search_holds_less_than_the_best_alone():
    """Forty kernels equal but for 2% noise a case, the search holding 2% under the best of them: a rule's gain over
    what the search holds is no evidence alone, since the best alone gains as much (weighed against the held figure
    only, 11 of these 40 populations gave a rule)."""
    import random

    labels = [f"c{i}" for i in range(12)]
    cs = [compose.Case(label=label, features={("size", 0, 0): 4096, N: 2 ** (10 + i % 6),
                                              ("dtype", 0): "float32" if i < 6 else "bfloat16"})
          for i, label in enumerate(labels)]
    rules = 0
    for trial in range(40):
        rng = random.Random(trial)
        parts = {pid: part(pid, {label: 0.8 * math.exp(rng.gauss(0, 0.02)) for label in labels})
                 for pid in range(1, 41)}
        best = max(math.exp(sum(math.log(v) for v in p.value.values()) / len(labels)) for p in parts.values())
        rules += not isinstance(compose.learn(cs, parts, held=best / 1.02)[0], compose.Leaf)
    assert rules == 0


def test_the_same_figures_give_the_same_rule_whatever_the_hash_seed():
    """Kernels whose figures are a permutation of each other's have equal sums up to the order they are added in:
    the order must be the cases', never a set's (which changes with PYTHONHASHSEED), or the rule changes by run."""
    script = ("from evolve import compose\n"
              "cs = [compose.Case(f'short{i}', {('size', 0, 0): 10}) for i in range(3)]\n"
              "cs.append(compose.Case('long', {('size', 0, 0): 1000}))\n"
              "v = [0.28976488419505636, 0.5157089818664244, 0.4725216009014138]\n"
              "def part(pid, short, long):\n"
              "    return compose.Part(pid, '', {**{f'short{i}': short[i] for i in range(3)}, 'long': long})\n"
              "parts = {1: part(1, [0.2] * 3, 0.9), 2: part(2, v, 0.01), 3: part(3, v[1:] + v[:1], 0.01)}\n"
              "tree, loss = compose.learn(cs, parts)\nprint(compose.leaves(tree))\n")
    seen = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(6)}
    assert len(seen) == 1, seen


def test_a_problem_with_many_cases_is_searched_less_deep(monkeypatch):
    """The search over every rule grows with the cube of the cuts: past MAX_RULES sets of cases it searches rules
    less deep, which still finds a rule that one cut makes."""
    cs = cases([256, 1024, 4096, 16384])
    monkeypatch.setattr(compose, "MAX_RULES", 7)  # one cut deep weighs 7 sets here (all four, three cuts' two sides)
    tree, _ = compose.learn(cs, crossing(cs, 1024))
    assert isinstance(tree, compose.Split) and tree.test == 2048
    assert [compose.route(tree, c) for c in cs] == [1, 1, 2, 2]


def test_a_dtype_split_dispatches_on_the_dtype():
    cs = cases([256, 1024]) + cases([256, 1024], dtype="bfloat16")
    parts = [part(1, {c.label: 3.0 if c.features[("dtype", 0)] == "float32" else 1.0 for c in cs}),
             part(2, {c.label: 1.0 if c.features[("dtype", 0)] == "float32" else 3.0 for c in cs})]
    found = compose.plan(parts, cs, None, 0.02)
    assert found is not None and sorted(found.parts) == [1, 2]
    assert "inputs[0].dtype == torch.bfloat16" in found.source
    assert found.chosen == {c.label: 1 if c.features[("dtype", 0)] == "float32" else 2 for c in cs}
    namespace = {}
    exec(compile(found.source, "<composite>", "exec"), namespace)
    assert namespace["custom_kernel"](torch.empty(2, 300, dtype=torch.bfloat16)) == "k2"
    assert namespace["custom_kernel"](torch.empty(2, 300, dtype=torch.float32)) == "k1"


# --- merging sources --------------------------------------------------------------------------------------------

TRICKY = '''\
import torch
import triton.language as tl
from math import sqrt as root

SCALE = 2.0
count = 0


def register(key):
    return lambda fn: fn


def by_param(SCALE):
    return SCALE * 3


def by_local(x):
    SCALE = 5.0
    return x * SCALE


def reads_module(x, factor=SCALE):
    return x.SCALE + factor * SCALE + root(count)


class Holder:
    count = 3
    width = count + 1

    def method(self):
        return self.count + count


def bump():
    global count
    count += 1
    return count


def init_cache():
    global CACHE
    CACHE = {"scale": SCALE}


def read_cache():
    return CACHE


@register(lambda SCALE: SCALE + 1)
def decorated(v):
    return v


@register(lambda v: v * SCALE)
def decorated2(v):
    return by_param(SCALE=SCALE)


TABLE = [SCALE * i for i in range(4)]


def comps(xs):
    a = {k: SCALE for k in xs}
    b = [count for count in xs]
    return a, b, (i + count for i in xs)


LABEL = f"scale={SCALE} count={count:>3}"


def custom_kernel(x):
    return x * SCALE
'''


def test_split_source_renames_exactly_the_module_level_names():
    imports, body = compose.split_source(TRICKY, "_c7")
    assert [ast.unparse(n) for n in imports] == ["import torch", "import triton.language as tl",
                                                "from math import sqrt as root"]
    assert "import" not in body  # hoisted
    expected = [
        "SCALE_c7 = 2.0", "count_c7 = 0",
        "def register_c7(key):", "return lambda fn: fn",
        "def by_param_c7(SCALE):\n    return SCALE * 3",  # a parameter shadows the constant
        "def by_local_c7(x):\n    SCALE = 5.0\n    return x * SCALE\n",  # a local shadows it
        "def reads_module_c7(x, factor=SCALE_c7):",  # a default is evaluated at module level
        "return x.SCALE + factor * SCALE_c7 + root(count_c7)",  # attributes and imports left alone
        "class Holder_c7:\n    count = 3\n    width = count + 1",  # class-level names are the class's own
        "return self.count + count_c7",  # a method sees the module's count, not the class's
        "def bump_c7():\n    global count_c7\n    count_c7 += 1\n    return count_c7",
        "def init_cache_c7():\n    global CACHE_c7\n    CACHE_c7 = {'scale': SCALE_c7}".replace("'", '"'),
        "def read_cache_c7():\n    return CACHE_c7",  # bound only through `global`, still module-level
        "@register_c7(lambda SCALE: SCALE + 1)",  # a lambda parameter
        "@register_c7(lambda v: v * SCALE_c7)",  # a lambda reading the module
        "return by_param_c7(SCALE=SCALE_c7)",  # the keyword's name is the parameter's, not the module's
        "TABLE_c7 = [SCALE_c7 * i for i in range(4)]",
        "a = {k: SCALE_c7 for k in xs}",
        "b = [count for count in xs]",  # the comprehension's own variable
        "return a, b, (i + count_c7 for i in xs)",
        'LABEL_c7 = f"scale={SCALE_c7} count={count_c7:>3}"',
        "def custom_kernel_c7(x):\n    return x * SCALE_c7",
    ]
    for text in expected:
        assert text in body, text
    for wrong in ("x.SCALE_c7", "self.count_c7", "factor_c7", "root_c7", "torch_c7", "tl_c7", "_c7_c7",
                  "def method_c7", "width_c7", "by_param_c7(SCALE_c7=", "lambda SCALE_c7", "for count_c7 in"):
        assert wrong not in body, wrong

    # the merged text behaves as the original did
    namespace = {}
    exec(compile("\n".join(ast.unparse(n) for n in imports) + "\n" + body, "<merged>", "exec"), namespace)
    assert namespace["by_param_c7"](1.0) == 3.0 and namespace["by_local_c7"](1.0) == 5.0
    assert namespace["Holder_c7"].width == 4 and namespace["Holder_c7"]().method() == 3
    assert namespace["bump_c7"]() == 1 and namespace["count_c7"] == 1
    namespace["init_cache_c7"]()
    assert namespace["read_cache_c7"]() == {"scale": 2.0}
    assert namespace["decorated2_c7"](0) == 6.0
    assert namespace["comps_c7"]([5])[1] == [5]
    assert namespace["LABEL_c7"] == "scale=2.0 count=  0"
    assert namespace["custom_kernel_c7"](2.0) == 4.0


STAR = "from math import *\n\n\ndef custom_kernel(x):\n    return x * pi\n"
SHARED_LINE = "import torch; X = 1\n\n\ndef custom_kernel(x):\n    return x * X\n"


@pytest.mark.parametrize("source, message", [(STAR, "star import"), (SHARED_LINE, "shares its line")],
                         ids=["star-import", "import-sharing-a-line"])
def test_unmergeable_sources_raise(source, message):
    with pytest.raises(compose.ComposeError, match=message):
        compose.split_source(source, "_c3")


@pytest.mark.parametrize("bad_source", [STAR, SHARED_LINE], ids=["star-import", "import-sharing-a-line"])
def test_plan_leaves_an_unmergeable_kernel_out(bad_source):
    cs = cases([256, 1024, 4096, 16384])
    small = {c.label: c.features[N] <= 1024 for c in cs}
    a = part(1, {label: 4.0 if s else 1.0 for label, s in small.items()})
    b = part(2, {label: 1.0 if s else 4.0 for label, s in small.items()})  # second best on long rows
    bad = part(3, {label: 0.5 if s else 8.0 for label, s in small.items()}, source=bad_source)  # best on long rows
    assert sorted(compose.leaves(compose.learn(cs, {1: a, 2: b, 3: bad})[0])) == [1, 3]

    found = compose.plan([a, b, bad], cs, None, 0.02)
    assert found is not None
    assert sorted(found.parts) == [1, 2]
    assert "_c3" not in found.source and "custom_kernel_c1" in found.source and "custom_kernel_c2" in found.source
    ast.parse(found.source)

    assert compose.plan([a, bad], cs, None, 0.02) is None  # fewer than two kernels remain


# --- the composer in the search ---------------------------------------------------------------------------------

def cpu_rows(ms_small: float, ms_large: float) -> list[dict]:
    return [{"case": "fp32 4x32", "ms": ms_small, "inputs": [{"shape": [4, 32], "dtype": "float32"}]},
            {"case": "fp32 2x512", "ms": ms_large, "inputs": [{"shape": [2, 512], "dtype": "float32"}]}]


def test_compose_step_evaluates_a_real_composite_and_records_its_lineage(tmp_path, cache_dir):
    db = tmp_path / "a.db"
    config = RunConfig(problem_dir=str(TWO), db=str(db), eval=EvalOptions(device="cpu", cache_dir=cache_dir))
    search = Search(config, Archive(db))
    try:
        search.start()
        ids = []
        # the seed wins on long rows, multi_row on short rows
        for path, (small, large) in ((ROWS_SRC, (4.0, 10.0)), (MULTI_SRC, (2.0, 20.0))):
            cand = search.archive.add_candidate(search.run_id, source=path.read_text(), proposer="seed")
            verdict = ladder(fitness=None, shapes=cpu_rows(small, large), mode="cpu")
            done = search.archive.record_verdict(cand.id, verdict, score_of(verdict))
            search.admit(done, noise_of(verdict))
            ids.append(done.id)

        assert search.step("composer", 0) is True
        search.drain()
        composites = [c for c in search.archive.candidates(search.run_id) if c.proposer == compose.COMPOSER]
        assert len(composites) == 1
        comp = composites[0]
        assert comp.template == "shape-dispatch"
        assert sorted(comp.parent_ids) == sorted(ids)
        assert comp.generation == 1
        assert comp.status == "evaluated" and comp.ok is True, (comp.failed_rung, comp.reason)
        assert f"return custom_kernel_c{ids[1]}(*inputs)" in comp.source  # short rows: multi_row
        assert "# expect: ok" in MULTI_SRC.read_text() and "# expect:" not in comp.source  # the solution's marker
        verdict = search.archive.verdict(comp.id)
        assert verdict.mode == "cpu"
        assert [row["case"] for row in verdict.shapes] == ["fp32 4x32", "fp32 2x512"]
        assert verdict.shapes[0]["inputs"] == [{"shape": [4, 32], "dtype": "float32"}]
        assert verdict.shapes[1]["inputs"] == [{"shape": [2, 512], "dtype": "float32"}]

        assert search.step("composer", 0) is False  # the same composite is not proposed twice
        assert sum(c.proposer == compose.COMPOSER for c in search.archive.candidates(search.run_id)) == 1

        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
        shown = subprocess.run([sys.executable, "-m", "evolve.cli", "show", str(comp.id), "--db", str(db),
                                "--no-prompt"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
        assert shown.returncode == 0, shown.stderr
        assert "composite" in shown.stdout
        for pid in ids:
            assert f"#{pid} (seed)" in shown.stdout
    finally:
        shutil.rmtree(search.work, ignore_errors=True)
        search.archive.close()


# --- material, the composer in the loop, and the device filter (a fake evaluator) -------------------------------

FAKE_MS = {"single_block": (5.0, 5.0), "multi_row": (1.0, 10.0), "softmax_rows": (10.0, 1.0),
           "composite": (1.0, 1.0)}


def which(source: str) -> str:
    if "def custom_kernel(*inputs)" in source:
        return "composite"
    if "softmax_rows_kernel" in source:
        return "multi_row"
    if "softmax_looped_kernel" in source:
        return "softmax_rows"
    assert "def softmax_kernel(" in source
    return "single_block"


class FakeEvaluator:
    def __init__(self):
        self.seen: list[str] = []

    def __call__(self, path, problem_path, options):
        kind = which(Path(path).read_text())
        self.seen.append(kind)
        return ladder(fitness=None, mode="cpu", shapes=cpu_rows(*FAKE_MS[kind]))


@pytest.fixture
def problem(tmp_path):
    """two_regimes with one seed (single_block) and two correct solutions (multi_row, softmax_rows)."""
    folder = tmp_path / "two_regimes"
    shutil.copytree(TWO, folder)
    (folder / "seeds").mkdir()
    (folder / "solutions" / "correct").mkdir(parents=True)
    shutil.copy(SINGLE_SRC, folder / "seeds" / "single_block.py")
    shutil.copy(MULTI_SRC, folder / "solutions" / "correct" / "multi_row.py")
    (folder / "solutions" / "correct" / "softmax_rows.py").write_text("# expect: ok\n" + ROWS_SRC.read_text())
    return folder


def test_material_first_then_a_composite_of_the_winners(tmp_path, problem):
    db = tmp_path / "m.db"
    fake = FakeEvaluator()
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=6)
    archive = Archive(db)
    try:
        summary = Search(config, archive, proposer=None, evaluate=fake).run()
        cands = archive.candidates(summary.run_id)
        assert all(c.status == "evaluated" for c in cands)
        assert [(c.proposer, c.template) for c in cands[:3]] == [
            ("seed", "single_block.py"), ("solution", "multi_row.py"), ("solution", "softmax_rows.py")]
        assert fake.seen[:4] == ["single_block", "multi_row", "softmax_rows", "composite"]
        composites = [c for c in cands if c.proposer == compose.COMPOSER]
        assert len(composites) == 1 and composites[0].id == cands[3].id
        comp = composites[0]
        by_template = {c.template: c.id for c in cands[:3]}
        assert sorted(comp.parent_ids) == sorted([by_template["multi_row.py"], by_template["softmax_rows.py"]])
        assert by_template["single_block.py"] not in comp.parent_ids
        assert f"return custom_kernel_c{by_template['multi_row.py']}(*inputs)" in comp.source
        assert summary.best.id == comp.id  # 1 ms everywhere beats every part
        assert summary.evaluated == 6
    finally:
        archive.close()


def test_kernels_archived_on_another_device_are_not_material_nor_duplicates(tmp_path, problem):
    db = tmp_path / "d.db"
    archive = Archive(db)
    try:
        seed_source = SINGLE_SRC.read_text()
        gpu_run = archive.start_run("two_regimes", str(problem), {}, "NVIDIA H200", {})
        gpu = archive.add_candidate(gpu_run, source=seed_source, proposer="seed")
        gpu = archive.record_verdict(gpu.id, ladder(fitness=0.8), 0.8)
        assert gpu.ok is True and gpu.status == "evaluated"
        archive.finish_run(gpu_run, "test")

        fake = FakeEvaluator()
        config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=1)
        search = Search(config, archive, proposer=None, evaluate=fake)
        search.start()
        assert search.device == device_name("cpu") == "cpu (Triton interpreter)"
        assert gpu.id not in search.population.members and len(search.population) == 0
        assert [p.name for p, _ in search.strategies["material"].files] == ["single_block.py", "multi_row.py",
                                                                             "softmax_rows.py"]
        assert gpu.hash in archive.known_hashes("two_regimes", "NVIDIA H200")
        assert gpu.hash not in archive.known_hashes("two_regimes", search.device)

        assert search.step("material", 0) is True
        search.drain()
        cpu = archive.candidates(search.run_id)
        assert len(cpu) == 1 and cpu[0].proposer == "seed" and cpu[0].hash == gpu.hash
        assert cpu[0].status == "evaluated" and cpu[0].ok is True
        assert fake.seen == ["single_block"]
        assert search.best.id == cpu[0].id and gpu.id not in search.population.members
        shutil.rmtree(search.work, ignore_errors=True)
        search.keep_answered()
    finally:
        archive.close()


@pytest.mark.parametrize("source", [
    "BLOCK = 4\nclass Cfg:\n    BLOCK = BLOCK * 2\ndef custom_kernel(x):\n    return Cfg.BLOCK\n",
    "m = max(1, 2)\nmax = lambda *a: 0\ndef custom_kernel(x):\n    return m\n",
    "SCALE = 2\ndef custom_kernel(x):\n    return globals()['SCALE']\n",
], ids=["class-reads-then-binds", "shadows-a-builtin", "globals"])
def test_sources_whose_meaning_renaming_would_change_are_refused(source):
    with pytest.raises(compose.ComposeError):
        compose.split_source(source, "_c1")


def test_labels_and_values_from_the_problem_cannot_break_the_composite():
    cs = [compose.Case('bad"""\\N label', {("value", 0): 'a"""b'}), compose.Case("other", {("value", 0): "c"})]
    found = compose.plan([part(1, {cs[0].label: 2.0, "other": 1.0}), part(2, {cs[0].label: 1.0, "other": 2.0})],
                         cs, None, 0.02)
    namespace = {}
    exec(found.source, namespace)  # noqa: S102 - the composite of two tiny test kernels
    assert namespace["custom_kernel"]('a"""b') == "k1" and namespace["custom_kernel"]("c") == "k2"


def test_the_search_hands_the_tuner_per_case_figures_and_aims_trials_at_a_regime(tmp_path, problem):
    """In an embedded run the tuner hears each setting's per-case figures, and every second trial of a structure is
    asked of a study of the regime where it is weakest (here the larger or smaller shapes of the CPU cases)."""
    db = tmp_path / "t.db"
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"), max_candidates=10)
    archive = Archive(db)
    try:
        search = Search(config, archive, proposer=None, evaluate=FakeEvaluator())
        search.run()
        tuned = [c for c in archive.candidates(search.run_id) if c.proposer == "tuner"]
        assert len(tuned) >= 2, [c.proposer for c in archive.candidates(search.run_id)]
        only_options = {c.id for c in archive.candidates(search.run_id) if c.template in ("multi_row.py",
                                                                                         "single_block.py")}
        assert not any(set(c.parent_ids) & only_options for c in tuned)  # num_warps means nothing to the interpreter
        aimed = {regime: study for (_, regime), study in search.strategies["tuner"].tuner.studies.items()
                 if regime is not None}
        assert set(aimed) <= {"smaller shapes", "larger shapes"} and aimed, \
            list(search.strategies["tuner"].tuner.studies)
        for study in aimed.values():  # a regime's study holds the settings' figures on its cases (1 / ms)
            values = [t.value for t in study.trials if t.value is not None]
            assert values and all(any(v == pytest.approx(f) for f in (1.0, 0.1, 0.2)) for v in values), values
        assert all(cases for _, _, cases in next(iter(search.strategies["tuner"].tuner.history.values())))
    finally:
        archive.close()


def test_a_composite_is_planned_while_tuner_trials_fill_the_lanes_but_one_at_a_time(tmp_path, problem):
    """With several lanes an embedded run keeps every lane busy with tuner trials, so the pipeline is never empty:
    a composite is still planned from the verdicts in so far, unless another composite is in the pipeline."""
    db = tmp_path / "w.db"
    fake = FakeEvaluator()
    config = RunConfig(problem_dir=str(problem), db=str(db), eval=EvalOptions(device="cpu"))
    search = Search(config, Archive(db), proposer=None, evaluate=fake)
    try:
        search.start()
        for kind, path in (("single_block", SINGLE_SRC), ("multi_row", MULTI_SRC), ("softmax_rows", ROWS_SRC)):
            cand = search.archive.add_candidate(search.run_id, source=path.read_text(), proposer="seed")
            verdict = ladder(fitness=None, mode="cpu", shapes=cpu_rows(*FAKE_MS[kind]))
            search.admit(search.archive.record_verdict(cand.id, verdict, score_of(verdict)), noise_of(verdict))
        source = SINGLE_SRC.read_text()
        in_flight = search.archive.add_candidate(search.run_id, source=source + "\n_IN_FLIGHT = 1\n",
                                                 proposer=compose.COMPOSER)
        search.waiting[in_flight.id] = (in_flight, None)
        assert search.step("composer", 0) is False  # one composite in the pipeline already
        search.waiting.pop(in_flight.id)
        trial = search.archive.add_candidate(search.run_id, source=source + "\n_TRIAL = 1\n", proposer="tuner")
        search.waiting[trial.id] = (trial, None)  # a tuner trial on a lane, its verdict not in
        assert search.step("composer", 0) is True
        assert fake.seen == ["composite"]
        search.waiting.pop(trial.id)
        search.drain()
        composite = [c for c in search.archive.candidates(search.run_id)
                     if c.proposer == compose.COMPOSER and c.id != in_flight.id]
        assert len(composite) == 1 and composite[0].status == "evaluated" and composite[0].ok
    finally:
        search.archive.close()
        shutil.rmtree(search.work, ignore_errors=True)
