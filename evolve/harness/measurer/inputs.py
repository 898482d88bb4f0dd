"""Every input of an evaluation, made by the measurer from the problem's seeds mixed with a secret that only it and
the parent know: a candidate cannot know the values it will be called on, and every timed call sees new ones."""
from __future__ import annotations

import torch

from ..shared.formats.base import poison
from ..shared.seeds import COMPILE_SEED, mix
from .exchange import CallSet, ProblemFault


class InputMaker:
    """The problem's inputs for a case and a seed, on the evaluation's device unless told another."""

    def __init__(self, problem, reference, secret: int, device: torch.device):
        self.problem, self.reference, self.secret, self.device = problem, reference, secret, device

    def make(self, case, seed: int, device=None):
        """An Inputs (leaves, and the structure where the format keeps one); ProblemFault when the problem's own
        generator raises."""
        inputs = generate(self.reference, case, mix(self.secret, seed, case.seed), device or self.device)
        inputs.buffers = self.reference.buffers(case, inputs)
        for index in inputs.buffers:  # a handed-out output buffer: NaN (or an extreme) until written
            poison(inputs.leaves[index])
        return inputs

    def call_set(self, case, seed: int, device=None):
        """The inputs and the call the runner gets for them (the outputs it must return: shapes and dtypes)."""
        inputs = self.make(case, seed, device)
        return inputs, CallSet(inputs.leaves, self.reference.expects(case, inputs), inputs.tree, inputs.buffers)

    def compile_sets(self, device) -> list:
        """The compile rung's calls: the test cases' inputs (made before any other rung's, in this thread)."""
        sets = []
        for case in self.problem.tests:
            inputs = self.make(case, COMPILE_SEED, device)
            sets.append(CallSet(inputs.leaves, [], inputs.tree, inputs.buffers))
        return sets


def generate(reference, case, seed: int, device):
    """The problem's inputs for one case; its generator's failure a ProblemFault, which the parent judges."""
    try:
        return reference.generate(case, seed, device)
    except Exception as exc:  # noqa: BLE001 - the problem's own code
        from ..shared.wire import short_error

        raise ProblemFault(f"the problem's input generator raised on {case.label}: {short_error(exc)}", case.label,
                           seed) from None
