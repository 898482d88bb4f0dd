"""Whose fault a failure of the problem's input generator is, decided with no candidate loaded
(harness/parent/generator_fault.py): a problem fault stops a whole run, so a candidate must not be able to cause one."""
import shutil
import textwrap
from pathlib import Path

from evolve.harness import EvalOptions, evaluate
from evolve.pipeline import harness_fault

ROOT = Path(__file__).resolve().parents[1]
HONEST = ROOT / "problems" / "softmax" / "solutions" / "correct" / "single_block.py"


def _problem(tmp_path, generator: str) -> Path:
    """The adversarial softmax problem, its generator wrapped by `generator` (which calls _made for the inputs)."""
    folder = tmp_path / "problem"
    shutil.copytree(ROOT / "tests" / "adversarial" / "problem", folder)
    with open(folder / "reference.py", "a") as reference:
        reference.write("\n_made = generate_input\n" + textwrap.dedent(generator))
    return folder


def test_a_candidate_that_makes_the_generator_fail_fails_its_own_rung_and_the_run_goes_on(tmp_path):
    """The problem's generator fails while a process of a given name runs (as it would while a candidate holds the
    memory its inputs need). A candidate that takes that name at import made the measurer's next inputs fail, and that
    was a problem fault, which stops the run: now the same inputs are made with no candidate loaded, they are made,
    and the failure is the candidate's."""
    mark = "hog-" + tmp_path.name[-8:]
    problem = _problem(tmp_path, f'''
        import os

        def generate_input(seed, M, N, dtype="float32", device="cpu"):
            for pid in os.listdir("/proc"):
                try:
                    name, state = open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)
                except (OSError, ValueError):
                    continue
                if name.endswith("(" + {mark!r}) and state.split()[0] != "Z":  # a zombie holds nothing
                    raise RuntimeError("no memory left for the inputs")
            return _made(seed, M, N, dtype, device)
    ''')
    candidate = tmp_path / "hog.py"
    candidate.write_text(HONEST.read_text() + textwrap.dedent(f'''
        import ctypes

        ctypes.CDLL(None).prctl(15, {mark!r}.encode(), 0, 0, 0)  # PR_SET_NAME: what the generator looks for
    '''))
    verdict = evaluate(candidate, problem, EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache"),
                                                       static_check=False))
    failure = verdict.failure
    assert failure is not None and "no memory left for the inputs" in failure.reason, verdict.rungs
    assert "with none loaded the same inputs were made, so the failure is the candidate's" in failure.reason
    assert verdict.problem_fault is None and harness_fault(verdict) is None


def test_a_generator_out_of_memory_with_no_candidate_loaded_is_evaluated_again_not_charged(tmp_path):
    """Memory that another process holds fails the generator with or without the candidate: the evaluation is the
    harness's failure (a lane makes it again), neither the candidate's nor a fault of the problem that stops the run."""
    problem = _problem(tmp_path, '''
        def generate_input(seed, M, N, dtype="float32", device="cpu"):
            raise MemoryError("cannot allocate the inputs")
    ''')
    verdict = evaluate(HONEST, problem, EvalOptions(device="cpu", cache_dir=str(tmp_path / "cache")))
    assert verdict.problem_fault is None
    reason = harness_fault(verdict)
    assert reason and "it is evaluated again" in reason and "cannot allocate the inputs" in reason, verdict.rungs


def test_the_child_that_makes_inputs_lets_a_generator_name_its_threads(tmp_path):
    """On a card the CUDA driver names its threads as it starts (/proc/self/task/*/comm); a child jailed without
    /proc/self failed there, and every generator failure judged on a card became a problem fault."""
    from evolve.harness.parent import jailed

    problem = _problem(tmp_path, '''
        def generate_input(seed, M, N, dtype="float32", device="cpu"):
            open("/proc/self/comm", "w").write("generator")
            return _made(seed, M, N, dtype, device)
    ''')
    answer = jailed.ask("inputs", {"problem": str(problem), "case": "fp32 1x7", "seed": 3}, 120, runner_user=False)
    assert answer.get("made") is True, answer
