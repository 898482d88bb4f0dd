"""The profiler's child: Nsight Compute around one call of a candidate on one benchmark case.

    python -m evolve.harness.profile launch JOB    jail this process, then become `ncu ... python -m ... target JOB`
    python -m evolve.harness.profile target JOB    (under ncu) make the case's inputs, call the candidate once to
                                                   compile and warm up, then once more between cudaProfilerStart and
                                                   cudaProfilerStop: only that call's kernels are profiled

JOB is a JSON file the parent wrote: candidate, problem, case index, seed, ncu path and arguments, work folder. The
jail is applied in `launch`, before ncu starts, so ncu and everything it starts are inside it: writes only beneath
the work folder and /proc (the profiled process is a grandchild whose /proc entry cannot be named before it exists,
and CUDA writes there), TCP only on Nsight Compute's own ports, no signals to processes outside. What the profiled
process reports is advice for the next prompt and never enters a verdict; the parent reads the report as numbers.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

NCU_PORTS = range(49152, 49152 + 64)  # ncu's default base port and its default --max-connections


def launch(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    work = job["work"]
    from . import jail

    status = jail.apply([work, "/proc"], ports=NCU_PORTS)
    Path(work, "jail").write_text(status)
    if not status.startswith("landlock") and not job.get("unjailed_ok"):
        print(f"not profiled: the jail could not be applied ({status})", file=sys.stderr)
        return 3
    os.environ.update({"HOME": work, "TMPDIR": work})
    argv = [job["ncu"], *job["ncu_args"], "--log-file", str(Path(work, "ncu.csv")),
            sys.executable, "-m", "evolve.harness.profile", "target", job_path]
    os.execv(job["ncu"], argv)
    return 0  # not reached


def target(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    import importlib.util

    import torch

    from .formats import load_problem, reference_for

    problem = load_problem(job["problem"])
    reference = reference_for(problem)
    case = problem.benchmarks[job["case"]]
    inputs = reference.generate(case, job["seed"], torch.device("cuda"))
    spec = importlib.util.spec_from_file_location("candidate", job["candidate"])
    module = importlib.util.module_from_spec(spec)
    sys.modules["candidate"] = module
    if job.get("beside"):
        sys.path.insert(0, str(Path(job["candidate"]).parent))
    spec.loader.exec_module(module)

    def call():
        return module.custom_kernel(inputs.data) if inputs.tree is not None else module.custom_kernel(*inputs.leaves)

    call()  # compiles, autotunes, warms caches
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    return 0


def main(argv) -> int:
    if len(argv) != 3 or argv[1] not in ("launch", "target"):
        print(__doc__, file=sys.stderr)
        return 2
    return launch(argv[2]) if argv[1] == "launch" else target(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
