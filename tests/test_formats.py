"""The formats people already use: GPU MODE task folders and KernelBench files, as they are, through `evolve eval`,
`evolve run` (a scripted model over real HTTP) and `evolve best --export-format`, whose output passes the format's
own check."""
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torch

from evolve.harness.shared.formats import detect, reference_for
from evolve.harness import EvalOptions, ProblemError, evaluate, jail, load_problem
from evolve.harness.shared.metrics import error_metrics, judge
from llm_server import ScriptedLLM
from test_run import env, evolve, fenced, rows

ROOT = Path(__file__).resolve().parents[1]
GPUMODE = ROOT / "tests" / "data" / "gpumode_vectoradd"
KERNELBENCH = ROOT / "tests" / "data" / "kernelbench"
UPSTREAM = ROOT / "tests" / "data" / "gpumode_upstream"  # a group of tasks laid out as GPU MODE's repository has them


def failure(verdict):
    return next(((r.name, r.reason) for r in verdict.rungs if r.failed), None)


# -- loading --------------------------------------------------------------------------------------------------------
def test_formats_are_told_apart(softmax_dir):
    assert detect(softmax_dir) == "evolve"
    assert detect(GPUMODE) == "gpumode"
    assert detect(KERNELBENCH / "19_ReLU.py") == "kernelbench"


def test_gpumode_task_loads_as_it_is():
    p = load_problem(GPUMODE)
    assert p.format == "gpumode" and p.name == "gpumode_vectoradd"
    assert [c.label for c in p.tests] == ["size=7", "size=33", "size=100"]
    assert [c.seed for c in p.tests] == [4242, 5236, 1001]  # the task's own seeds, mixed with the secret later
    assert [c.label for c in p.cpu_benchmarks] == ["size=7"]  # the smallest test
    assert "Add two float16 matrices" in p.description and "custom_kernel(data)" in p.contract


def test_kernelbench_file_loads_as_it_is():
    p = load_problem(KERNELBENCH / "scale_shift_relu.py")
    assert p.format == "kernelbench" and p.name == "scale_shift_relu"
    assert [c.label for c in p.tests] == ["default"] and p.benchmarks == p.tests
    assert "class Model" in p.description and "named_parameters()" in p.contract


def test_a_gpumode_task_loads_with_the_files_its_task_yml_names_from_a_folder_up():
    """upstream keeps utils.py (and its own eval.py) one folder above the tasks and lists them in task.yml's files:"""
    problem = load_problem(UPSTREAM / "prefixsum_py")
    assert problem.extra["files"] == {"task.py": str(UPSTREAM / "prefixsum_py" / "task.py"),
                                      "utils.py": str(UPSTREAM / "utils.py")}  # eval.py is the format's harness
    reference = reference_for(problem)
    inputs = reference.generate(problem.tests[0], 7, "cpu")
    refs = reference.reference(inputs, on_cpu=True)
    assert reference.check(inputs, refs, refs) is None
    assert problem.beside_files() == {"task.py": UPSTREAM / "prefixsum_py" / "task.py"}


def test_two_tasks_never_share_a_utils_module(tmp_path):
    """Each reference imports its own group's utils.py afresh, even in one process (a bench over two groups)."""
    other = tmp_path / "group"
    shutil.copytree(UPSTREAM, other, ignore=shutil.ignore_patterns("__pycache__"))
    first = reference_for(load_problem(UPSTREAM / "prefixsum_py"))
    second = reference_for(load_problem(other / "prefixsum_py"))
    assert first.module.match_reference.__code__.co_filename == str(UPSTREAM / "utils.py")
    assert second.module.match_reference.__code__.co_filename == str((other / "utils.py").resolve())


def test_a_task_yml_naming_a_missing_file_says_to_copy_the_group(tmp_path):
    shutil.copytree(UPSTREAM / "prefixsum_py", tmp_path / "prefixsum_py")  # the task alone, without ../utils.py
    with pytest.raises(ProblemError, match="utils.py.*does not exist.*one folder above the task"):
        load_problem(tmp_path / "prefixsum_py")


def test_check_problem_takes_upstream_as_it_ships():
    """A TODO in upstream's reference, a case fixed by design, upstream's own solutions/ (a pure-torch ref.py, an
    empty.py without an `# expect:` line): none is a fault; the last two are said, and the check goes on."""
    from evolve.problems import check_problem

    said: list = []
    assert check_problem(UPSTREAM / "prefixsum_py", device="cpu", progress=said.append) == []
    assert any("solutions/correct/ref.py: upstream's own" in line for line in said), said
    assert load_problem(UPSTREAM / "prefixsum_py").solution_files("correct") == []
    said.clear()
    assert check_problem(UPSTREAM / "diagonal_py", device="cpu", progress=said.append) == []
    assert any("size=16 kind=diagonal: fixed by design" in line for line in said), said


def test_an_aliased_entry_point_is_an_entry_point_and_the_message_names_the_formats():
    from evolve.harness.runner.static.check import screen

    problem = load_problem(UPSTREAM / "prefixsum_py")
    options = (problem.forbid_calls, problem.forbid_modules, True, problem.extra["allow_modules"], "triton",
               problem.extra["entry"])
    assert screen(UPSTREAM / "submissions" / "prefix_alias.py", *options) == []
    source = (UPSTREAM / "submissions" / "prefix_alias.py").read_text()
    for entry in ("custom_kernel = torch.softmax", "custom_kernel = _missing", "kernel = _prefix_sum"):
        path = UPSTREAM.parent / "no_entry_tmp.py"
        try:
            path.write_text(source.replace("custom_kernel = _prefix_sum", entry))
            assert "defines no function custom_kernel(data)" in screen(path, *options), entry
        finally:
            path.unlink()


def _generator_raising_on(folder: Path, size: int) -> Path:
    """A copy of the upstream prefix-sum task whose generate_input raises for one size, with a seed kernel."""
    shutil.copytree(UPSTREAM, folder, ignore=shutil.ignore_patterns("__pycache__"))
    reference = folder / "prefixsum_py" / "reference.py"
    reference.write_text(reference.read_text().replace(
        "def generate_input(size: int, seed: int) -> input_t:\n",
        f"def generate_input(size: int, seed: int) -> input_t:\n    if size == {size}:\n"
        "        raise ValueError('no inputs of this size')\n"))
    (folder / "prefixsum_py" / "seeds").mkdir()
    shutil.copy(UPSTREAM / "submissions" / "prefix_alias.py", folder / "prefixsum_py" / "seeds")
    return folder / "prefixsum_py"


def test_a_problem_whose_generator_raises_is_the_problems_fault_and_stops_the_run(tmp_path):
    """Not the candidate's compile crash: the verdict says whose fault it is, and a run stops at once instead of
    telling a model its kernel crashed."""
    task = _generator_raising_on(tmp_path / "group", 1025)
    verdict = evaluate(UPSTREAM / "submissions" / "prefix_alias.py", task, EvalOptions(cache_dir=str(tmp_path)))
    assert failure(verdict)[0] == "compile"
    assert verdict.problem_fault and "input generator raised on size=1025: ValueError" in verdict.problem_fault
    assert "a fault of the problem, not the candidate's" in verdict.problem_fault
    result = evolve("run", task, "--db", tmp_path / "r.db", "--budget", "5m")
    assert "stopped: the problem itself failed, so no kernel can pass" in result.stdout, result.stdout + result.stderr
    assert rows(tmp_path / "r.db", "select count(*) as n from candidates")[0]["n"] == 1


def test_a_gpumode_submission_may_return_float32_into_the_buffer_the_task_hands_out(tmp_path):
    """The prefix sum as GPU MODE's users write it: float32 where the reference gives float64 (the task's own check
    accepts it, and judges it), written into the output tensor generate_input hands out, which is then returned."""
    problem = load_problem(UPSTREAM / "prefixsum_py")
    reference = reference_for(problem)
    assert reference.buffers(problem.tests[0], reference.generate(problem.tests[0], 3, "cpu")) == {1}
    options = EvalOptions(cache_dir=str(tmp_path))
    verdict = evaluate(UPSTREAM / "submissions" / "prefix_alias.py", UPSTREAM / "prefixsum_py", options)
    assert verdict.rung("correctness").ok, failure(verdict)
    histogram = load_problem(UPSTREAM / "histogram_py")  # an int64 buffer of counts: filled with its minimum
    reference = reference_for(histogram)
    assert reference.buffers(histogram.tests[0], reference.generate(histogram.tests[0], 3, "cpu")) == {1}
    verdict = evaluate(UPSTREAM / "submissions" / "histogram_atomics.py", UPSTREAM / "histogram_py", options)
    assert verdict.rung("correctness").ok, failure(verdict)


def _prefix_sum_returning(tmp_path, lines: str) -> Path:
    """A copy of the upstream-layout prefix-sum task whose ref_kernel ends in `lines` instead of its own return."""
    shutil.copytree(UPSTREAM, tmp_path / "group", ignore=shutil.ignore_patterns("__pycache__"))
    reference_py = tmp_path / "group" / "prefixsum_py" / "reference.py"
    reference_py.write_text(reference_py.read_text().replace(
        "    return torch.cumsum(x.to(torch.float64), dim=0)\n", lines))
    return tmp_path / "group" / "prefixsum_py"


def test_a_handed_out_buffer_is_found_where_the_reference_varies_from_run_to_run(tmp_path):
    """A cumsum on a GPU sums in an order that varies between runs, so the reference run with the buffer NaN-filled
    is not bit for bit the first run: the buffer is still the task's, and only the input it reads is not."""
    problem = load_problem(_prefix_sum_returning(
        tmp_path, "    import os\n    wobble = 1 + 1e-13 * int.from_bytes(os.urandom(2), 'little')  # as a GPU's scan "
        "order\n    return torch.cumsum(x.to(torch.float64), dim=0) * wobble\n"))
    reference = reference_for(problem)
    case = problem.tests[2]
    sample = reference.generate(case, 3, "cpu")
    assert not torch.equal(reference._run(sample)[0][0], reference._run(sample)[0][0])  # it does vary
    assert reference.buffers(case, sample) == {1}


def test_a_refused_output_is_set_beside_a_float64_run_of_the_tasks_reference(tmp_path):
    """A task whose reference is looser than its own check (here it rounds its input to float16 first, as a float32
    algorithm may lose more than the check allows over a long reduction): an honest float32 prefix sum is refused,
    and the reason says the output lies nearer ref_kernel run on float64 inputs than the task's reference does."""
    task = _prefix_sum_returning(tmp_path, "    loose = x.half() if x.dtype == torch.float32 else x\n"
                                           "    return torch.cumsum(loose.to(torch.float64), dim=0)\n")
    options = EvalOptions(cache_dir=str(tmp_path / "cache"))
    verdict = evaluate(UPSTREAM / "submissions" / "prefix_alias.py", task, options)
    rung, reason = failure(verdict)
    found = re.search(r"against ref_kernel on float64 inputs, the output's largest error is (\S+) and the task's "
                      r"reference's (\S+)$", reason)
    assert rung == "correctness" and "check_implementation: mismatch" in reason and found, (rung, reason)
    mine, theirs = float(found.group(1)), float(found.group(2))
    assert mine * 100 < theirs, (mine, theirs)  # about 1.6e-05 against 9.4e-03


@pytest.mark.parametrize("name, rung, reason", [
    ("handed_unwritten.py", "run", "not finite"),  # the handed-out buffer is NaN until written
    ("unread_input_returned.py", "run", "output aliases an input"),  # an input the reference reads
])
def test_only_a_handed_out_buffer_may_be_returned_and_only_once_written(name, rung, reason, tmp_path):
    source = UPSTREAM / "submissions" / name
    if name == "unread_input_returned.py":
        source = tmp_path / name
        source.write_text((UPSTREAM / "submissions" / "handed_unwritten.py").read_text().replace(
            "    return output\n", "    return x\n"))
    verdict = evaluate(source, UPSTREAM / "prefixsum_py", EvalOptions(cache_dir=str(tmp_path)))
    assert failure(verdict)[0] == rung and reason in failure(verdict)[1], failure(verdict)


def test_a_foreign_problems_roofline_counts_the_references_floating_point_work():
    """No formula in the format: torch's FlopCounterMode counts the reference's matmuls (on meta tensors), so a
    matmul is bounded by the card's matmul rate rather than a memory bound it can never approach; element-wise work
    counts nothing and stays memory-bound."""
    matmul = load_problem(KERNELBENCH / "square_matmul.py")
    profile = reference_for(matmul).profile(matmul.benchmarks[0])
    assert profile["flops"] == 2 * 96 ** 3 and profile["bytes"] == 3 * 96 * 96 * 4
    relu = load_problem(KERNELBENCH / "19_ReLU.py")
    assert reference_for(relu).profile(relu.benchmarks[0])["flops"] == 0


def test_the_outputs_shapes_come_from_meta_tensors_where_the_reference_runs_on_them(tmp_path):
    """Today's KernelBench inputs are up to 9 GB: the outputs' shapes and dtypes are read from the reference run on
    meta tensors, which hold no memory, and from a real copy only where the reference cannot run on meta."""
    problem_py = tmp_path / "softmax_seen.py"
    problem_py.write_text(
        "import torch\n\nseen = []\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        seen.append(x.device.type)\n        if x.device.type == 'meta' and MEAN_ON_HOST:\n"
        "            x.sum().item()  # data a meta tensor does not have\n"
        "        return torch.softmax(x, dim=1)\n\n\nMEAN_ON_HOST = False\n\n\n"
        "def get_inputs():\n    return [torch.rand(4, 8)]\n\n\ndef get_init_inputs():\n    return []\n")
    for on_host, devices in ((False, ["meta"]), (True, ["meta", "cpu"])):
        problem_py.write_text(problem_py.read_text().replace(f"MEAN_ON_HOST = {not on_host}",
                                                             f"MEAN_ON_HOST = {on_host}"))
        problem = load_problem(problem_py)
        reference = reference_for(problem)
        case = problem.benchmarks[0]
        sample = reference.generate(case, 0, "cpu")
        reference.module.seen.clear()
        assert reference.expects(case, sample) == [([4, 8], "float32")]
        assert reference.module.seen == devices


def test_a_leaf_the_reference_reads_is_never_taken_for_a_buffer_for_the_spread_it_allows():
    """The comparison behind a handed-out buffer: a float32 sum's varying order passes, a NaN that moved, an infinity
    of the other sign, an integer off by one or a value moved by more than the spread does not."""
    from evolve.harness.shared.formats.gpumode import _unchanged

    base = torch.tensor([1000.0, -3.0, float("nan"), float("inf")])
    assert _unchanged([base], [base + torch.tensor([0.05, 0.0, 0.0, 0.0])])  # 5e-5 of the largest value
    assert not _unchanged([base], [base + torch.tensor([0.5, 0.0, 0.0, 0.0])])
    assert not _unchanged([base], [torch.tensor([1000.0, float("nan"), float("nan"), float("inf")])])
    assert not _unchanged([base], [torch.tensor([1000.0, -3.0, float("nan"), -float("inf")])])
    assert not _unchanged([torch.tensor([5, 7])], [torch.tensor([5, 8])])
    assert not _unchanged([base], [base.double()])  # another dtype


def test_a_handed_out_buffer_counts_once_as_the_output_it_holds():
    """The roofline's bytes: the prefix sum reads x and writes the float32 buffer it was handed (8 bytes an element),
    not x, the buffer read and a float64 output (16); on an H100 the old count put honest kernels at 1.24 of the
    roofline. The histogram reads its data and writes its int64 counts."""
    problem = load_problem(UPSTREAM / "prefixsum_py")
    case = problem.benchmarks[0]
    assert reference_for(problem).profile(case)["bytes"] == 8 * dict(case.params)["size"]
    histogram = load_problem(UPSTREAM / "histogram_py")
    case = histogram.benchmarks[0]
    sample = reference_for(histogram).generate(case, 0, "cpu")
    data, counts = sample.leaves[0], sample.leaves[1]
    assert reference_for(histogram).profile(case)["bytes"] == \
        data.numel() * data.element_size() + counts.numel() * counts.element_size()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU")
def test_a_task_that_makes_its_inputs_on_cuda_is_told_in_one_line_without_a_gpu(tmp_path):
    """10 of GPU MODE's 11 tasks draw their inputs on the card: check-problem, eval and run say so before any
    process starts."""
    from evolve.problems import check_problem

    shutil.copytree(UPSTREAM, tmp_path / "group", ignore=shutil.ignore_patterns("__pycache__"))
    task = tmp_path / "group" / "prefixsum_py"
    reference = task / "reference.py"
    reference.write_text(reference.read_text().replace('device = "cuda" if torch.cuda.is_available() else "cpu"',
                                                       'device = "cuda"'))
    faults = check_problem(task, device="cpu")
    assert len(faults) == 1 and "makes its inputs on CUDA" in faults[0] and "machine with one" in faults[0], faults
    verdict = evaluate(UPSTREAM / "submissions" / "prefix_alias.py", task, EvalOptions(cache_dir=str(tmp_path)))
    assert failure(verdict)[0] == "load" and "makes its inputs on CUDA" in failure(verdict)[1]
    assert not verdict.setup  # no measurer was started
    result = evolve("run", task, "--db", tmp_path / "r.db")
    assert result.returncode != 0 and "makes its inputs on CUDA" in result.stderr


def test_a_kernelbench_file_too_large_for_this_machines_memory_is_told_before_it_is_drawn(tmp_path):
    """Today's KernelBench sizes draw 4-9 GB of inputs: weighed on meta tensors first, against the memory free now,
    instead of dying in the allocator."""
    from evolve.harness.parent.problem_facts import available_memory
    from evolve.problems import check_problem

    huge = tmp_path / "huge_matmul.py"
    huge.write_text((KERNELBENCH / "square_matmul.py").read_text().replace("N = 96", "N = 1 << 20"))  # 8 TB a side
    faults = check_problem(huge, device="cpu")
    assert len(faults) == 1 and "its inputs take 8192.0 GB" in faults[0] and "more memory" in faults[0], faults
    assert available_memory() > 0
    verdict = evaluate(KERNELBENCH / "kernels" / "relu.py", huge, EvalOptions(device="cpu", cache_dir=str(tmp_path)))
    assert failure(verdict)[0] == "load" and "its inputs take" in failure(verdict)[1]


def test_a_kernelbench_file_with_large_inputs_gets_a_longer_timeout_and_the_lanes_its_card_holds(tmp_path, capsys):
    """At today's sizes a KernelBench evaluation takes five to eight minutes on an H100 (drawing and checking 4-9 GB
    inputs), beyond evolve run's default --timeout, and a card holds only a few of them at once: the defaults follow
    the inputs' weight (on meta tensors), and values given on the command line are kept."""
    from evolve.api import LARGE_INPUT_TIMEOUT_S, plan_run, timeout_for
    from evolve.harness.parent.problem_facts import input_bytes
    from evolve.pipeline import auto_per_gpu

    large = tmp_path / "large_matmul.py"
    large.write_text((KERNELBENCH / "square_matmul.py").read_text().replace("N = 96", "N = 1 << 14"))  # 2 GiB
    size, small = input_bytes(load_problem(large)), input_bytes(load_problem(KERNELBENCH / "square_matmul.py"))
    assert size == 2 << 30 and 0 < small < 1 << 20
    assert timeout_for(load_problem(KERNELBENCH / "square_matmul.py"), None) == (180.0, None)
    limit, said = timeout_for(load_problem(large), None)
    assert limit == LARGE_INPUT_TIMEOUT_S and "inputs take 2.0 GB a call" in said, said
    assert timeout_for(load_problem(large), 180.0) == (180.0, None)  # a limit given is kept
    plan = plan_run(large, device="cuda", gpus=("0",))  # one card named: the lanes its memory holds for these inputs
    assert plan.config.eval.timeout_s == LARGE_INPUT_TIMEOUT_S
    assert any("per card at most" in note for note in plan.notes), plan.notes
    rmsnorm = 112 * 64 * 512 * 512 * 4  # KernelBench's 36_RMSNorm_ at today's sizes: 7.5 GB a call
    assert [auto_per_gpu(1, cores=16, host_gib=128, card_gib=gib, input_bytes=rmsnorm) for gib in (79.6, 139.8)] \
        == [2, 4]
    assert [auto_per_gpu(1, cores=16, host_gib=128, card_gib=gib) for gib in (79.6, 139.8)] == [6, 8]


def test_malformed_foreign_problems_name_the_file(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.yml").write_text("tests: [{size: 3, seed: 1}]\n")
    with pytest.raises(ProblemError, match="task.yml: missing field 'benchmarks'"):
        load_problem(task)
    (task / "task.yml").write_text("tests: [{size: 3, seed: 1}]\nbenchmarks: [{size: 9, seed: x}]\n")
    (task / "reference.py").write_text("def ref_kernel(data):\n    return data\n")
    with pytest.raises(ProblemError, match="reference.py: missing generate_input, check_implementation"):
        load_problem(task)
    bench = tmp_path / "bench.py"
    bench.write_text("class Model:\n    pass\n")
    with pytest.raises(ProblemError, match="bench.py: missing get_inputs, get_init_inputs"):
        load_problem(bench)
    with pytest.raises(ProblemError, match="problem.toml: missing"):
        load_problem(tmp_path)


# -- the ladder on foreign problems ------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name, expected", [
    ("add", None),  # imports the task's own type names, takes data
    # the element never written holds whatever the runner's memory held: NaN, a number far enough off for evolve's
    # cosine check, or one the task's own check refuses; the correctness rung, or already the run rung where the
    # memory the output took held NaN before the correctness rung fills it so (a runner's heap holds what the fork
    # server's did)
    ("off_by_one", {"correctness": ("not finite", "cosine=", "check_implementation: mismatch"),
                    "run": ("not finite",)}),
    ("subtle", {"correctness": ("check_implementation",)}),  # cosine passes: only the task's own check sees it
])
def test_gpumode_submissions(name, expected, cache_dir):
    verdict = evaluate(GPUMODE / "submissions" / f"{name}.py", GPUMODE, EvalOptions(cache_dir=cache_dir))
    if expected is None:
        assert verdict.ok, failure(verdict)
        assert verdict.rung("correctness").metrics["checks"] == 9  # 3 cases x 3 seeds
        assert "a gpumode problem fixes its shapes" in verdict.rung("correctness").metrics["listed_only"]
        return
    rung, reason = failure(verdict)
    assert rung in expected and any(fragment in reason for fragment in expected[rung]), (rung, reason)


@pytest.mark.slow
@pytest.mark.parametrize("kernel, problem, expected", [
    ("relu", "19_ReLU.py", None),
    ("scale_shift_relu", "scale_shift_relu.py", None),  # x, then the parameter, then the buffer
    ("scale_without_shift", "scale_shift_relu.py", "cosine"),
    ("zeros", "softmax_wide.py", "the output is all zeros"),  # cosine 1, and within KernelBench's atol
])
def test_kernelbench_kernels(kernel, problem, expected, cache_dir):
    verdict = evaluate(KERNELBENCH / "kernels" / f"{kernel}.py", KERNELBENCH / problem,
                       EvalOptions(cache_dir=cache_dir))
    if expected is None:
        assert verdict.ok, failure(verdict)
        return
    assert failure(verdict)[0] == "correctness" and expected in failure(verdict)[1]


# -- evolve's scale check beside the format's own ------------------------------------------------------------------
SCALED = {"zeros": (0.0, "the output is all zeros"), "double": (2.0, "its norm is 2x the reference's")}


def _one_check(target):
    """A foreign problem's largest test case: its reference, inputs, reference outputs and an honest output (the op
    computed in float32 and stored in the output's dtype, as a kernel does)."""
    problem = load_problem(target)
    reference, case = reference_for(problem), problem.tests[-1]
    inputs = reference.generate(case, 1, "cpu")
    refs = reference.reference(inputs, on_cpu=True)
    a = inputs.leaves[0]
    honest = torch.softmax(a, dim=1) if problem.format == "kernelbench" else (a.float() + inputs.leaves[1].float())
    return problem, reference, case, inputs, refs, (honest.to(a.dtype),)


def _evolves_check(problem, case, outs, refs):
    """evolve's own metrics on the outputs, as the measurer's correctness check applies them."""
    for o, r in zip(outs, refs):
        tol = problem.tolerance_for(case, str(o.dtype).replace("torch.", ""))
        reason = judge(error_metrics(o, r, tol.floor, tol.rtol), tol.rtol, tol.min_cosine)
        if reason:
            return reason
    return None


@pytest.mark.parametrize("wrong", sorted(SCALED))
@pytest.mark.parametrize("target", [KERNELBENCH / "softmax_wide.py", GPUMODE], ids=["kernelbench", "gpumode"])
def test_an_output_of_the_wrong_scale_fails_whatever_the_formats_check_says(target, wrong, monkeypatch):
    problem, reference, case, inputs, refs, honest = _one_check(target)
    scale, fragment = SCALED[wrong]
    outs = tuple(o * scale for o in honest)  # cosine 1: only the scale is wrong
    reason = _evolves_check(problem, case, outs, refs)
    assert reason is not None and fragment in reason, reason
    if problem.format == "kernelbench":  # KernelBench's own allclose passes both: every value is ~1e-4
        assert all(torch.allclose(o.double(), r, atol=1e-2, rtol=1e-2) for o, r in zip(outs, refs))
    else:  # a task whose own check passes anything
        monkeypatch.setattr(reference.module, "check_implementation", lambda data, output: (True, ""))
    # the format's check, which the measurer also runs on every timed call, holds evolve's scale check first
    reason = reference.check(inputs, outs, refs)
    assert reason is not None and fragment in reason, reason


@pytest.mark.parametrize("target", [KERNELBENCH / "softmax_wide.py", GPUMODE], ids=["kernelbench", "gpumode"])
def test_an_honest_foreign_output_passes_both_checks(target):
    problem, reference, case, inputs, refs, honest = _one_check(target)
    assert _evolves_check(problem, case, honest, refs) is None
    assert reference.check(inputs, honest, refs) is None


# -- run, best, export, and the format's own check ------------------------------------------------------------------
def _run_and_export(tmp_path, problem, kernel_source, export_format):
    db = tmp_path / "f.db"
    with ScriptedLLM() as llm:
        llm.enqueue(fenced(kernel_source))
        result = evolve("run", problem, "--db", db, "--model", "openai/scripted", "--api-base", llm.url,
                        "--max-candidates", 1, "--device", "cpu", "--tune-share", 0, "--concurrency", 1)
        prompt = llm.requests[0]["messages"]
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    cands = rows(db, "select * from candidates")
    assert len(cands) == 1 and cands[0]["ok"], cands
    exported = tmp_path / "submission.py"
    best = evolve("best", problem, "--db", db, "--export", exported, "--export-format", export_format,
                  "--no-verify")
    assert best.returncode == 0, best.stderr[-2000:]
    return exported, " ".join(str(m["content"]) for m in prompt)


def _interpreted(script: str, cwd: Path):
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env=env(TRITON_INTERPRET="1"))


@pytest.mark.slow
def test_gpumode_run_and_export_pass_the_tasks_own_check(tmp_path):
    source = (GPUMODE / "submissions" / "add.py").read_text()
    exported, prompt = _run_and_export(tmp_path, GPUMODE, source, "gpumode")
    assert "custom_kernel(data)" in prompt and "Add two float16 matrices" in prompt
    # GPU MODE's own evaluation, as its eval.py does it: generate, call the submission, check_implementation.
    check = _interpreted(
        "import sys\n"
        f"sys.path[:0] = [{str(GPUMODE)!r}, {str(exported.parent)!r}]\n"
        "from reference import generate_input, check_implementation\n"
        "from submission import custom_kernel\n"
        "for size, seed in ((7, 1), (100, 2)):\n"
        "    data = generate_input(size=size, seed=seed)\n"
        "    ok, message = check_implementation(data, custom_kernel(data))\n"
        "    assert ok, message\n"
        "print('passed')\n", tmp_path)
    assert check.returncode == 0 and "passed" in check.stdout, check.stderr[-3000:]


@pytest.mark.slow
def test_kernelbench_run_and_export_pass_kernelbenchs_own_check(tmp_path):
    problem = KERNELBENCH / "scale_shift_relu.py"
    source = (KERNELBENCH / "kernels" / "scale_shift_relu.py").read_text()
    exported, prompt = _run_and_export(tmp_path, problem, source, "kernelbench")
    assert "named_parameters()" in prompt and "class Model" in prompt
    text = exported.read_text()
    assert "class ModelNew" in text and "class Model(" in text
    # KernelBench's own check: seed, build Model; seed, build ModelNew; same inputs; allclose(atol=rtol=1e-2).
    check = _interpreted(
        "import importlib.util, torch\n"
        f"spec = importlib.util.spec_from_file_location('submission', {str(exported)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "for seed in (0, 1):\n"
        "    torch.manual_seed(seed); ref = m.Model(*m.get_init_inputs())\n"
        "    torch.manual_seed(seed); new = m.ModelNew(*m.get_init_inputs())\n"
        "    inputs = m.get_inputs()\n"
        "    with torch.no_grad():\n"
        "        assert torch.allclose(ref(*inputs), new(*inputs), atol=1e-2, rtol=1e-2)\n"
        "print('passed')\n", tmp_path)
    assert check.returncode == 0 and "passed" in check.stdout, check.stderr[-3000:]


def test_export_formats(softmax_dir):
    from evolve.harness.shared.formats import export

    native = load_problem(softmax_dir)
    wrapped = export("def custom_kernel(x):\n    return x\n", native, "gpumode")
    namespace: dict = {}
    exec(compile(wrapped, "submission", "exec"), namespace)  # noqa: S102 - our own generated wrapper
    assert namespace["custom_kernel"]((5,)) == 5  # GPU MODE passes the data tuple as one argument
    with pytest.raises(ProblemError, match="not a KernelBench problem"):
        export("def custom_kernel(x):\n    return x\n", native, "kernelbench")
    assert export("src", native, "evolve") == "src"


def test_kernelbenchs_own_check_a_chunk_at_a_time_judges_as_on_the_whole(monkeypatch):
    """KernelBench's allclose runs on the host a chunk at a time (today's outputs are up to 6.4 GB): an element off by
    more than its tolerance fails wherever the chunks fall, with the whole output's largest difference."""
    from evolve.harness.shared.formats import kernelbench

    problem = load_problem(KERNELBENCH / "19_ReLU.py")
    reference = reference_for(problem)
    ref = torch.randn(50, 30)
    ref[40, 7] = 0.0
    out = ref.clone()
    out[40, 7] = 0.05  # within evolve's scale check, beyond KernelBench's atol
    for chunk in (7, 100, 1 << 25):
        monkeypatch.setattr(kernelbench, "CHECK_CHUNK", chunk)
        assert reference.check(None, (ref.clone(),), (ref.double(),)) is None
        reason = reference.check(None, (out,), (ref.double(),))
        assert reason and "max |out - ref| = 0.05 exceeds atol" in reason, (chunk, reason)


@pytest.mark.skipif(jail.abi_version() < 1, reason="needs Landlock: the jailed child is what keeps the write out")
def test_a_foreign_problems_code_runs_jailed_never_in_the_parent(tmp_path):
    """A KernelBench file is code from anywhere. What the parent asks of it before an evaluation (does it make its
    inputs on CUDA, how large are they) and check-problem's run of its reference happen in a jailed child: the
    file's code writes nothing outside that child's folder and never runs in this process."""
    from evolve.harness.parent import problem_facts
    from evolve.problems import check_problem

    marker = tmp_path / "written_by_the_problem"
    problem_file = tmp_path / "relu_that_writes.py"
    problem_file.write_text((KERNELBENCH / "19_ReLU.py").read_text().replace(
        "def get_inputs():\n", f"def get_inputs():\n    try:\n        open({str(marker)!r}, 'a').write('here')\n"
                               "    except OSError:\n        pass\n"))
    problem = load_problem(problem_file)
    problem_facts.cannot_run_here(problem)
    assert problem_facts.input_bytes(problem) == 16 * 1031 * 4  # the child answered
    assert check_problem(problem_file, device="cpu") == []
    assert not marker.exists()


def test_in_an_evaluation_a_foreign_problems_code_runs_jailed_never_in_the_measurer(tmp_path, cache_dir):
    """The measurer keeps the evaluation's key, its timings and the caches later evaluations trust; a KernelBench
    file's code (at import, in its generator and in its model) runs in a jailed process of its own
    (harness/runner/problem_process.py), which writes nothing outside its folder. The evaluation is as before."""
    marker = tmp_path / "written_by_the_problem"
    write = f"try:\n    open({str(marker)!r}, 'a').write('here')\nexcept OSError:\n    pass\n"
    source = (KERNELBENCH / "19_ReLU.py").read_text()
    # the CUDA driver names its threads as it starts (/proc/self/task/*/comm): the jail lets the process do so
    named = "    open('/proc/self/comm', 'w').write('problem')\n"
    source = source.replace("def get_inputs():\n", "def get_inputs():\n" + named + textwrap.indent(write, "    "))
    problem_file = tmp_path / "relu_that_writes.py"
    problem_file.write_text(write + source)
    verdict = evaluate(KERNELBENCH / "kernels" / "relu.py", problem_file, EvalOptions(cache_dir=cache_dir))
    assert verdict.ok, failure(verdict)
    assert not marker.exists()
