"""The jailed child (harness/parent/jailed.py starts it): jailed before it reads anything it is asked about, it reads
the request on the descriptor it is given, does the work the request names and writes its answer as one line of JSON."""
from __future__ import annotations

import json
import os
import sys


def static_check(request: dict) -> dict:
    """The candidate's violations (static/check.py: check_source), importing what resolving its names takes."""
    from ...lang import DEFAULT
    from .static.check import ENTRY, Rejection, check_source

    try:
        return {"problems": check_source(request["source"], request["filename"], request["forbid_calls"],
                                         request["forbid_modules"], request["allow_modules"],
                                         request["language"] or DEFAULT, request["entry"] or ENTRY)}
    except Rejection as exc:
        return {"problems": [str(exc)]}


def inputs(request: dict) -> dict:
    """Whether the problem's generator makes one case's inputs with this seed here, where no candidate is loaded:
    {"made": True}, or {"made": False, "reason": ..., "out_of_memory": whether it ran out of memory}."""
    import torch

    from ..shared.formats import load_problem, reference_for
    from ..shared.wire import short_error

    problem = load_problem(request["problem"])
    case = next(c for c in [*problem.tests, *problem.benchmarks] if c.label == request["case"])
    device = torch.device("cuda" if request["gpu"] else "cpu")
    try:
        reference_for(problem).generate(case, int(request["seed"]), device)
        if device.type == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the problem's own code: its failure is the answer
        out_of_memory = isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in str(exc).lower()
        return {"made": False, "reason": short_error(exc), "out_of_memory": out_of_memory}
    return {"made": True}


def foreign_facts(request: dict) -> dict:
    """What the parent asks of a foreign problem before it evaluates one (harness/parent/problem_facts.py)."""
    from ..shared.formats import cuda_only_inputs_here, input_bytes_here, load_problem

    problem = load_problem(request["problem"])
    return {"cuda_only": cuda_only_inputs_here(problem), "input_bytes": input_bytes_here(problem)}


def reference_faults(request: dict) -> dict:
    """check-problem's run of the problem's own functions on its test cases (evolve/problems.py)."""
    from ..shared.formats import load_problem
    from .reference_faults import reference_faults as faults_of

    notes: list = []
    faults = faults_of(load_problem(request["problem"]), notes)
    return {"faults": faults, "notes": notes}


WORK = {"static_check": static_check, "inputs": inputs, "foreign_facts": foreign_facts,
        "reference_faults": reference_faults}


def main(argv) -> int:
    from ..shared import lifeline, privilege
    from . import jail

    with os.fdopen(int(argv[1]), "rb") as said:
        request = json.loads(said.read())
    # before anything it is asked about is read: it may write only in its own folder (a package's import makes a
    # temporary file there: CuTeDSL's), deleted with it, and reach a card only where it was given one
    # /proc/self: the CUDA driver writes there as it starts (cudaGetDeviceCount fails without it)
    status = jail.apply([os.getcwd(), "/proc/self"], devices=bool(request["gpu"]))
    uid = os.environ.get(privilege.UID_ENV)
    if uid is not None:
        why = privilege.drop(int(uid), os.environ.get(privilege.READ_ANY_ENV) == "1")
        if why:
            raise SystemExit(why)
    lifeline.watch()
    answer = WORK[request["work"]](request)
    sys.stdout.write(json.dumps({**answer, "jail": status}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
