"""evolve model profile, extract and apply on a small transformer written here: the profile's ops and chains with
their counts, problem folders that check-problem passes as written, and the program with an archived kernel put back
whose outputs match the original's (under the Triton interpreter)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli import cli
from evolve.model_tools.extract import extract
from evolve.model_tools.profile import profile_program, render
from evolve.model_tools.program import ProgramError

ROOT = Path(__file__).resolve().parents[1]
# Two pre-LayerNorm blocks (attention, then an MLP with GELU) in an nn.ModuleList, and a final LayerNorm after the
# last residual add: so every op runs more than once, and add+layer_norm and the attention's mul+softmax are chains.
# Each residual add but the last feeds both the next LayerNorm and the next add: add+layer_norm with two outputs.
PROGRAM = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads)), dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.fc, self.act, self.out = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.drop(self.out(self.act(self.fc(self.ln2(x)))))


class Model(nn.Module):
    def __init__(self, width=32, heads=2, layers=2):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)


def program():
    torch.manual_seed(0)
    return Model(), (torch.randn(2, 8, 32),)
'''


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "tiny_gpt.py"
    path.write_text(PROGRAM)
    return path


def _row(profile, label, outputs=1):
    return next(r for r in profile.rows if r.pattern.label == label and len(r.pattern.output_ops()) == outputs)


def test_profile_lists_ops_and_chains_with_their_shapes_and_counts(program):
    profile = profile_program(program, "cpu", repeats=2)
    linear, norm = _row(profile, "linear"), _row(profile, "layer_norm")
    assert (len(linear.pattern.units), linear.pattern.kind) == (8, "linear")
    assert sorted(count for count in linear.pattern.variants().values()) == [2, 2, 2, 2]  # qkv, proj, fc, out
    assert (len(norm.pattern.units), norm.pattern.kind) == (5, "rows")
    scaled_softmax = _row(profile, "mul+softmax")
    assert scaled_softmax.pattern.id.startswith("c") and len(scaled_softmax.pattern.units) == 2
    assert dict(next(iter(scaled_softmax.pattern.variants()))[0]) == {"M": 2 * 2 * 8, "N": 8}
    assert _row(profile, "add+layer_norm").pattern.kind == "rows"
    assert len(_row(profile, "add+layer_norm").pattern.units) == 1  # the last block's add, read by ln_f alone
    assert _row(profile, "matmul").pattern.kind is None  # attention's batched matmuls: profiled, not extractable
    assert abs(sum(r.ms for r in profile.rows if r.pattern.id.startswith("o")) - profile.total_ms) < 1e-6
    table = render(profile)
    assert "max gain needs a GPU" in table and "mul+softmax" in table and "(x8)" not in table
    assert all(r.gain is None for r in profile.rows)  # no roofline on the CPU

    result = CliRunner().invoke(cli, ["model", "profile", str(program), "--json", "--repeats", "1", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    rows = {row["label"]: row for row in json.loads(result.output)["rows"]}
    assert rows["linear"]["calls"] == 8 and rows["linear"]["extractable"]
    assert {"shape": {"M": 16, "K": 32, "N": 96}, "dtype": "float32", "calls": 2} in rows["linear"]["shapes"]


def test_the_residual_add_read_by_a_layer_norm_and_the_next_add_is_a_chain_with_two_outputs(program):
    """In a pre-LayerNorm block the residual add's result is read by the next LayerNorm and by the next residual add:
    add+layer_norm is one chain returning both the sum and the normed rows, found once per add but the last (2 per
    block, less the last block's second, which ln_f alone reads), its bytes both inputs and both outputs."""
    from evolve.model_tools.roofline import unit_bytes

    profile = profile_program(program, "cpu", repeats=1)
    residual = _row(profile, "add+layer_norm", outputs=2).pattern
    assert residual.kind == "rows" and residual.output_ops() == ["add", "layer_norm"]
    assert len(residual.units) == 2 * 2 - 1 and residual.roles == ("full", "full", "row", "row")
    assert dict(next(iter(residual.variants()))[0]) == {"M": 16, "N": 32}
    assert residual.code.splitlines()[-1].strip() == "return (v0, v1)"
    rows, row = 16 * 32 * 4, 32 * 4  # float32 bytes of an (M, N) tensor and of a weight
    assert all(unit_bytes(unit) == 2 * rows + 2 * row + 2 * rows for unit in residual.units)
    assert _row(profile, "add+layer_norm").pattern.id != residual.id
    assert "add+layer_norm (2 out)" in render(profile)


def test_a_chain_never_takes_an_op_whose_other_operand_is_computed_from_the_chain(tmp_path):
    """h feeds a matmul and an add of that matmul's result: h and the add cannot be one kernel (the add waits for the
    matmul, which waits for h), so the chain is the add and the layer_norm, the add's result also returned."""
    path = tmp_path / "script.py"
    path.write_text("import torch\n\nW = torch.randn(64, 64)\n\n\ndef region(x, y):\n    h = x + y\n"
                    "    out = h + h @ W\n    return out, torch.nn.functional.layer_norm(out, (64,))\n\n\n"
                    "def program():\n    return region, (torch.randn(8, 64), torch.randn(8, 64))\n")
    chains = [r.pattern for r in profile_program(path, "cpu", repeats=1).rows if r.pattern.id.startswith("c")]
    assert [(c.label, c.output_ops(), len(c.units)) for c in chains] == [
        ("add+layer_norm", ["add", "layer_norm"], 1)]
    assert chains[0].roles == ("full", "full")  # h and h @ W, read from outside the chain


def test_extract_writes_the_programs_own_code_as_the_reference(program, tmp_path):
    profile = profile_program(program, "cpu", repeats=1)
    chain = _row(profile, "add+layer_norm").pattern
    folder, = extract(program, [chain.id], tmp_path / "problems")
    assert {p.name for p in folder.iterdir()} >= {"problem.toml", "reference.py", "notes.md", "seeds", "origin.json"}
    toml = (folder / "problem.toml").read_text()
    assert "[[benchmark]]\nshape = { M = 16, N = 32 }" in toml and "torch.nn.functional.layer_norm" in toml
    calls = sum(count for (_, _), count in chain.variants().items())  # weighted as often as it runs
    assert f'dtypes = ["float32"]\nweight = {calls}' in toml
    sys.path.insert(0, str(folder))
    try:
        import reference
        inputs = reference.generate_input(1, M=5, N=32)
        assert [tuple(t.shape) for t in inputs] == [(5, 32), (5, 32), (32,), (32,)]  # x, residual, weight, bias
        import torch
        assert torch.allclose(reference.ref_kernel(*inputs).float(), reference.baseline(*inputs), atol=1e-5)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("reference", None)
    with pytest.raises(ProgramError, match="cannot be written as a problem"):
        extract(program, [_row(profile, "matmul").pattern.id], tmp_path / "other")
    with pytest.raises(ProgramError, match="no pattern x9"):
        extract(program, ["x9"], tmp_path / "other")


def test_a_program_torch_fx_cannot_trace_is_told_what_to_do(tmp_path):
    path = tmp_path / "branchy.py"
    path.write_text("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                    "        return x if x.sum() > 0 else -x\n\ndef program():\n    return M(), (torch.ones(3),)\n")
    with pytest.raises(ProgramError, match="Data-dependent control flow"):
        profile_program(path, "cpu", repeats=1)
    (tmp_path / "empty.py").write_text("x = 1\n")
    with pytest.raises(ProgramError, match="no program\\(\\) function"):
        profile_program(tmp_path / "empty.py", "cpu", repeats=1)


def test_a_script_s_region_moved_into_a_function_is_profiled_as_a_module_is(tmp_path):
    """The region of a script worth profiling, as a plain function program() returns: its ops and chains are found
    and timed as a module's forward's are, a weight it reads from the script included."""
    path = tmp_path / "script.py"
    path.write_text("import torch\n\nW = torch.randn(64, 64)\n\n\ndef region(x):\n"
                    "    h = torch.nn.functional.gelu(x @ W + 1.0)\n    return torch.softmax(h * 0.5, dim=-1)\n\n\n"
                    "def program():\n    return region, (torch.randn(8, 64),)\n")
    profile = profile_program(path, "cpu", repeats=1)
    labels = [row.pattern.label for row in profile.rows]
    assert any("softmax" in label for label in labels) and any("gelu" in label for label in labels), labels
    assert profile.total_ms > 0 and all(0 < row.share <= 1 for row in profile.rows)  # a chain's ops are rows too


@pytest.mark.slow
def test_extracted_problems_pass_check_problem_as_written(program, tmp_path):
    """A chain (add+layer_norm), the residual one with two outputs and a single op (linear): check-problem runs the
    reference, the generated seed (must pass) and the generated wrong kernels (must fail; the two-output chain's miss
    a column of one output each) under the interpreter."""
    profile = profile_program(program, "cpu", repeats=1)
    picks = [_row(profile, "add+layer_norm").pattern.id, _row(profile, "add+layer_norm", outputs=2).pattern.id,
             _row(profile, "linear").pattern.id]
    result = CliRunner().invoke(cli, ["model", "extract", str(program), "--pick", ",".join(picks),
                                      "--out", str(tmp_path / "problems")])
    assert result.exit_code == 0, result.output
    for folder in sorted((tmp_path / "problems").iterdir()):
        checked = subprocess.run([sys.executable, "-m", "evolve.cli", "check-problem", str(folder), "--device", "cpu"],
                                 capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert checked.returncode == 0 and "no fault found" in checked.stdout, checked.stdout + checked.stderr
    residual = next(f for f in (tmp_path / "problems").iterdir() if f.name.startswith(f"tiny_gpt_{picks[1]}_"))
    assert sorted(p.name for p in (residual / "solutions" / "wrong").iterdir()) == [
        "missing_last_column_of_output0_add.py", "missing_last_column_of_output1_layer_norm.py"]


def _seed_applied(program, pick, tmp_path):
    """The pattern extracted, its seed archived by a one-candidate run, and `evolve model apply` run with it: the
    problem folder and the command's result (checked to have exited 0)."""
    folder, = extract(program, [pick], tmp_path / "problems")
    db = tmp_path / "evolve.db"
    ran = subprocess.run([sys.executable, "-m", "evolve.cli", "run", str(folder), "--max-candidates", "1",
                          "--db", str(db), "--device", "cpu"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    result = CliRunner().invoke(cli, ["model", "apply", str(program), "--problems", str(folder), "--db", str(db),
                                      "--out", str(tmp_path / "applied"), "--device", "cpu", "--repeats", "2"])
    assert result.exit_code == 0, result.output
    return folder, result


@pytest.mark.slow
def test_apply_puts_the_archived_kernel_back_and_the_outputs_match(program, tmp_path):
    """The softmax chain extracted, its seed archived by a one-candidate run, then put in place of both attention
    softmaxes: the program's outputs match the original's under the Triton interpreter."""
    profile = profile_program(program, "cpu", repeats=1)
    folder, result = _seed_applied(program, _row(profile, "mul+softmax").pattern.id, tmp_path)
    assert "match" in result.output and "Triton interpreter" in result.output
    saved = json.loads((tmp_path / "applied" / "result.json").read_text())
    assert saved["match"] and saved["replaced"] == {folder.name: 2} and saved["max_abs_diff"] < 1e-4
    assert saved["prediction"] is None  # no prediction from interpreter times
    assert f"kernels_evolve_{folder.name}(" in (tmp_path / "applied" / "patched_forward.py").read_text()
    assert (tmp_path / "applied" / "kernels" / f"{folder.name}.py").read_text().count("def custom_kernel") == 1



@pytest.mark.slow
def test_apply_feeds_both_results_of_the_residual_kernel_to_the_program(program, tmp_path):
    """The two-output add+layer_norm's seed put in place of its three units: each unit's LayerNorm users read the
    kernel's normed rows and the next residual add reads its sum (the next unit's input too), and the program's
    outputs match the original's under the Triton interpreter."""
    profile = profile_program(program, "cpu", repeats=1)
    folder, result = _seed_applied(program, _row(profile, "add+layer_norm", outputs=2).pattern.id, tmp_path)
    saved = json.loads((tmp_path / "applied" / "result.json").read_text())
    assert saved["match"] and saved["replaced"] == {folder.name: 3} and saved["max_abs_diff"] < 1e-4, result.output
    code = (tmp_path / "applied" / "patched_forward.py").read_text()
    assert code.count(f"= kernels_evolve_{folder.name}(") == 3
    assert code.count("torch.nn.functional.layer_norm(") == 2  # the first block's ln1 and ln_f: not in a chain
    total = re.search(rf"(\w+) = evolve_{folder.name}\[0\]", code).group(1)  # the first block's residual sum
    normed = re.search(rf"(\w+) = evolve_{folder.name}\[1\]", code).group(1)  # its ln2 of the sum
    assert f"kernels_evolve_{folder.name}({total}, " in code  # the next residual add reads the kernel's sum
    assert re.search(rf"linear\({normed}, blocks_0_fc_weight", code)  # the MLP reads the kernel's normed rows


@pytest.mark.gpu
def test_the_profile_on_the_card_bounds_each_op(program):
    """By hand on a GPU: the gain column is filled from the peaks evolve measured, or the note says how to get them."""
    profile = profile_program(program, "cuda", repeats=5)
    if profile.rows[0].bound_ms is None:
        assert "run one `evolve eval`" in profile.roofline_note
        return
    assert all(r.bound_ms is not None and r.gain >= 1.0 for r in profile.rows)


def test_profiler_ranges_give_every_op_its_own_time(program):
    """The bookkeeping a GPU profile uses (one profiler range per op, read back per op), run here with the CPU's
    figures: every op that computes gets a time of its own, and only those ops."""
    from evolve.model_tools.graph import is_compute
    from evolve.model_tools.profile import traced_program
    from evolve.model_tools.timing import profiled_times

    graph_module, _, inputs, _ = traced_program(program, "cpu")
    times = profiled_times(graph_module, inputs, repeats=2, warmup=1, gpu=False)
    computing = [node for node in graph_module.graph.nodes if is_compute(node)]
    assert set(times) == set(computing) and len(computing) > 20
    assert all(ms > 0 for ms in times.values())
