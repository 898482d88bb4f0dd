"""The measurer's checks of a candidate's outputs: the correctness rungs' (fresh inputs, the reference in float64 on a
pristine CPU copy, every element) and the timed calls' (every output of a window, its errors gathered on the device
and read once)."""
from __future__ import annotations

import os

import torch

from ..shared import metrics
from ..shared.formats.base import dtype_name, nbytes
from .calibration import MEASURER_MEMORY_SHARE
from .exchange import CallSet, Fail, nbytes_of


def _room_for_reference(inputs) -> bool:
    """Whether the card has room for a float64 reference of these inputs (a float64 copy of the inputs, the output and
    a temporary, each up to twice the inputs' size): else it is computed on the host, slower but within memory (a
    7.5 GB KernelBench RMSNorm input takes 45 GB so)."""
    tensors = [t for t in inputs.leaves if isinstance(t, torch.Tensor)]
    if not tensors or not tensors[0].is_cuda:
        return True
    free, _ = torch.cuda.mem_get_info(tensors[0].device)
    return 6 * nbytes(tensors) < free


def _device_memory(device) -> float:
    """The card's memory in bytes, or the host's where the calls go through shared files (the CPU)."""
    if getattr(device, "type", device) != "cuda":
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return float(torch.cuda.get_device_properties(device).total_memory)


def _input_there(inputs, out, figures: dict) -> str:
    """The input of the output's shape at the worst element (an elementwise op's x), for a reason: with the output
    and the reference there, what a tolerance's floor must allow."""
    where = figures.get("worst_index")
    for index, leaf in enumerate(inputs.leaves):
        if where and isinstance(leaf, torch.Tensor) and tuple(leaf.shape) == tuple(out.shape) and \
                leaf.is_floating_point():
            return f" (input {index} there: {float(leaf[tuple(where)]):.7g})"
    return ""


class Checks:
    def __init__(self, problem, reference, maker):
        self.problem, self.reference, self.maker = problem, reference, maker

    def correctness(self, caller, case, seeds, device) -> list[dict]:
        """Fresh inputs for each seed, the reference on a pristine CPU copy in float64, every element: the worst error
        metrics of each call, with the reason it fails (None where it passes). The seeds go in one call where three
        copies of their inputs and outputs (the measurer's, the shared one, the read-back) fit the measurer's share of
        the card, as a timing window's do, else in as many calls as it takes: today's KernelBench cases are 13 GB a
        seed."""
        budget = MEASURER_MEMORY_SHARE * _device_memory(device)
        results, group, used = [], [], 0
        for seed in seeds:
            inputs = self.maker.make(case, seed, device)
            refs = self.reference.reference(inputs, on_cpu=True)
            # each output's shape from this input's own reference (it may depend on the seed), dtype from the problem
            dtypes = [dtype for _, dtype in self.reference.expects(case, inputs)]
            call_set = CallSet(inputs.leaves, [(list(r.shape), d) for r, d in zip(refs, dtypes)], inputs.tree,
                               inputs.buffers)
            size = 3 * (nbytes(inputs.leaves) + sum(nbytes_of(shape, d) for shape, d in call_set.expects))
            if group and used + size > budget:
                results += self._check_group(caller, case, group)
                group, used = [], 0
            group.append((inputs, refs, call_set))  # inputs: the measurer's own copy, the runner sees the shared one
            used += size
        return results + (self._check_group(caller, case, group) if group else [])

    def _check_group(self, caller, case, group) -> list[dict]:
        try:
            outs = caller.call([s for _, _, s in group], "check", poison=True)
        except Fail as exc:
            raise Fail(f"{case.label}: {exc}") from None
        return [self._judge(case, out, refs, inputs, s) for out, (inputs, refs, s) in zip(outs, group)]

    def _judge(self, case, out, refs, inputs, call_set) -> dict:
        worst, reason = None, None
        for o, r, (_, dtype) in zip(out, refs, call_set.expects):
            if not metrics.all_finite(o):
                bad = int(torch.count_nonzero(torch.logical_not(torch.isfinite(o))))
                raise Fail(f"{case.label}: output not finite ({bad} NaN/Inf of {o.numel()})")
            tol = self.problem.tolerance_for(case, dtype)
            m = metrics.error_metrics(o.to("cpu"), r.to("cpu"), tol.floor, tol.rtol)
            judged = metrics.judge(m, tol.rtol, tol.min_cosine)
            reason = reason or (judged and judged + _input_there(inputs, o, m))
            worst = metrics.worst_of(worst, m)
        reason = reason or self.reference.check(inputs, out, refs)
        worst = worst or metrics.error_metrics(torch.zeros(1), torch.zeros(1), 1.0, 0.0)
        worst["reason"] = f"{case.label}: {reason}" if reason else None
        worst["dtype"] = call_set.expects[0][1] if call_set.expects else "output"
        return worst

    def timed(self, case, outs, sets_inputs) -> None:
        """Every output of a window against its reference. The float outputs' errors are gathered on the device, one
        figure per tolerance (harness/measurer/compare.py on a GPU), and read once (a window holds up to 256 calls);
        only a window that fails is gone through output by output, for the message."""
        from . import compare

        worst: dict = {}  # (floor, rtol) -> the largest relative error of the outputs judged by it, on the device
        on_cpu = bool(sets_inputs) and not _room_for_reference(sets_inputs[0])  # one case: every set alike
        for out, inputs in zip(outs, sets_inputs):
            refs = self.reference.reference(inputs, on_cpu=on_cpu)
            for o, r in zip(out, refs):
                if not o.is_floating_point():
                    if not torch.equal(o, r.to(device=o.device, dtype=o.dtype)):
                        raise Fail(f"{case.label}: a timed call returned a wrong output (integers differ)")
                    continue
                tol = self.problem.tolerance_for(case, dtype_name(o))
                key = (tol.floor, tol.rtol)
                if key not in worst:
                    worst[key] = torch.zeros(1, dtype=torch.float32, device=o.device)
                if compare.fits(o, r):
                    compare.worst_into(worst[key], o, r, tol.floor)
                else:
                    torch.maximum(worst[key], metrics.max_rel_tensor(o, r, tol.floor).reshape(1), out=worst[key])
            reason = self.reference.check(inputs, out, refs)
            del refs
            if reason:
                raise Fail(f"{case.label}: a timed call returned a wrong output ({reason})")
        if not worst:
            return
        read = torch.cat(list(worst.values())).tolist()  # one wait for the device
        excess = max(float(w) - rtol for w, (_, rtol) in zip(read, worst))  # float64: no rounding; NaN stays NaN
        if any(w != w for w in read):
            excess = float("nan")
        if not excess <= 0:
            self._timed_each(case, outs, sets_inputs, on_cpu)
            raise Fail(f"{case.label}: a timed call returned a wrong output (an error of {excess:.3g} over "
                       "its tolerance)")

    def _timed_each(self, case, outs, sets_inputs, on_cpu: bool) -> None:
        for out, inputs in zip(outs, sets_inputs):
            refs = self.reference.reference(inputs, on_cpu=on_cpu)
            for o, r in zip(out, refs):
                tol = self.problem.tolerance_for(case, dtype_name(o))
                if not o.is_floating_point():  # integers exactly, whatever their size (float32 holds 24 bits)
                    if not torch.equal(o, r.to(device=o.device, dtype=o.dtype)):
                        raise Fail(f"{case.label}: a timed call returned a wrong output (integers differ)")
                    continue
                worst = metrics.max_rel(o, r, tol.floor)
                if not worst <= tol.rtol:
                    raise Fail(f"{case.label}: a timed call returned a wrong output (max_rel={worst:.3g})")
            reason = self.reference.check(inputs, out, refs)
            del refs
            if reason:
                raise Fail(f"{case.label}: a timed call returned a wrong output ({reason})")
