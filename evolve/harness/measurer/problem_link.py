"""The measurer's handle on a foreign problem's code, which runs in a jailed process of its own
(harness/runner/problem_process.py): the same calls as any format's Reference, each a request and an answer over a pipe.

Each request and answer is a frame (harness/shared/frames.py): tensors, numbers, strings, lists and dicts only, so an
answer cannot run code in the measurer. Tensors travel through the host; the inputs the process made last stay there,
and a request names them by key instead of sending them back. KernelBench's check is evolve's own (no code of the
file's), so it runs here."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

import torch

from ..shared import lifeline
from ..shared.formats.base import Inputs, Reference, device_of, on_host, unflatten
from ..shared.frames import read_frame, write_frame


def reference_for(problem, device) -> Reference:
    """The problem's functions as the measurer calls them: an evolve problem's in this process (the user's own code,
    as the user's own process would run it), a foreign problem's in a jailed process."""
    if problem.format == "evolve":
        from ..shared.formats import reference_for as in_process

        return in_process(problem)
    return RemoteReference(problem, device)


class RemoteReference(Reference):
    times_own_baselines = True  # the problem's own function is timed where it runs

    def __init__(self, problem, device):
        super().__init__(problem)
        self.device = torch.device(device)
        self.folder = tempfile.mkdtemp(prefix="evolve-problem-", dir=os.getcwd())
        self.proc, self.to_child, self.from_child = _start(self.folder, self.device.type == "cuda")
        write_frame(self.to_child, {"problem": str(problem.path)})  # it starts up while the measurer goes on
        self.jail: str | None = None  # how it was jailed, from its first answer
        self._local_check = None
        if problem.format == "kernelbench":
            from ..shared.formats.kernelbench import check_outputs

            self._local_check = check_outputs

    def _ask(self, request: dict):
        if self.jail is None:
            self.jail = "not started"
            self.jail = str(self._answer(None)["jail"])
        return self._answer(request)

    def _answer(self, request: dict | None):
        try:
            if request is not None:
                write_frame(self.to_child, request)
            said = read_frame(self.from_child)
        except (OSError, EOFError, ValueError, RuntimeError) as exc:
            raise RuntimeError(f"the process running the problem's code stopped answering ({exc}; exit status "
                               f"{self.proc.poll()})") from None
        if isinstance(said, dict) and said.get("forgotten"):
            raise Forgotten()
        if not isinstance(said, dict) or ("answer" not in said and "error" not in said):
            raise RuntimeError("the process running the problem's code answered out of turn")
        if "error" in said:
            raise _raised(str(said["error"]), bool(said.get("out_of_memory")))
        return said["answer"]

    def _ask_on(self, request: dict, inputs: Inputs | list):
        """_ask about inputs (a list of them goes as "samples"), named by key where they can be, and again by their
        leaves where the process no longer has them."""
        for by_key in (True, False):
            named = [_named(i, by_key) for i in inputs] if isinstance(inputs, list) else [_named(inputs, by_key)]
            try:
                return self._ask({**request, **({"samples": named} if isinstance(inputs, list) else named[0])})
            except Forgotten:
                continue
        raise RuntimeError("the process running the problem's code forgot inputs it was sent whole")

    def generate(self, case, seed, device):
        said = self._ask({"op": "generate", "case": case.label, "seed": int(seed), "device": str(device)})
        leaves = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in said["leaves"])
        tree = said["tree"]
        inputs = Inputs(leaves, tree, unflatten(leaves, tree) if tree is not None else None)
        inputs.remote_key = said["key"]
        return inputs

    def buffers(self, case, sample):
        key = ("buffers", case.label)
        if key not in self._profiles:
            self._profiles[key] = frozenset(int(i) for i in
                                            self._ask_on({"op": "buffers", "case": case.label}, sample))
        return self._profiles[key]

    def expects(self, case, sample):
        key = ("expects", case.label)
        if key not in self._profiles:
            said = self._ask_on({"op": "expects", "case": case.label}, sample)
            self._profiles[key] = [(list(shape), str(dtype)) for shape, dtype in said]
        return self._profiles[key]

    def reference(self, inputs, on_cpu):
        outputs = self._ask_on({"op": "reference", "on_cpu": bool(on_cpu)}, inputs)
        device = "cpu" if on_cpu else device_of(inputs.leaves)
        return tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in outputs)

    def check(self, inputs, outputs, refs):
        if self._local_check is not None:
            return self._local_check(outputs, refs)
        said = self._ask_on({"op": "check", "outputs": on_host(outputs), "refs": on_host(refs)}, inputs)
        return None if said is None else str(said)

    def profile(self, case, sample=None):
        if case.label not in self._profiles:
            said = self._ask({"op": "profile", "case": case.label})
            self._profiles[case.label] = {"bytes": int(said["bytes"]), "flops": int(said["flops"]),
                                          "dtype": str(said["dtype"])}
        return self._profiles[case.label]

    @property
    def has_baseline(self):
        return True

    def time_baselines(self, samples, compiled: bool) -> dict:
        return self._ask_on({"op": "time_baselines", "compiled": bool(compiled)}, list(samples))

    def shapes_ahead(self, secret: int, device) -> dict:
        return self._ask({"op": "shapes_ahead", "secret": int(secret), "device": str(device)})

    def close(self) -> None:
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _start(folder: str, card: bool):
    """The jailed process, in a session of its own, its caches and temporary files in its folder."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    env = {**os.environ, "TRITON_CACHE_DIR": os.path.join(folder, "triton"), "TMPDIR": folder,
           "TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"), "XDG_CACHE_HOME": os.path.join(folder, "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    if not card:
        env["CUDA_VISIBLE_DEVICES"] = ""
    keep = [to_child_r, from_child_w]
    if lifeline.ENV in os.environ:
        keep.append(int(os.environ[lifeline.ENV]))
    proc = subprocess.Popen([sys.executable, "-m", "evolve.harness.runner.problem_process", str(to_child_r),
                             str(from_child_w), "1" if card else "0"], pass_fds=tuple(keep), cwd=folder, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    os.close(to_child_r)
    os.close(from_child_w)
    return proc, to_child_w, from_child_r


def _raised(error: str, out_of_memory: bool) -> Exception:
    """The exception the problem's code raised in its process ("ValueError: why"), as one of this process's: of a
    class of that name (a RuntimeError, or torch's OutOfMemoryError where memory ran out), so a reason reads as it
    would have had the code run here."""
    name, _, message = error.partition(": ")
    if out_of_memory:
        return torch.OutOfMemoryError(message or error)
    if not (name.isidentifier() and len(name) <= 80 and message):
        return RuntimeError(error)
    if name not in _RAISED:
        _RAISED[name] = type(name, (RuntimeError,), {})
    return _RAISED[name](message)


_RAISED: dict = {}


class Forgotten(Exception):
    """The process no longer keeps the inputs a request named by key."""


def _named(inputs: Inputs, by_key: bool) -> dict:
    """How a request names inputs: by key where the process made them and they are as it made them (output buffers
    the measurer filled are not), else by their leaves."""
    key = getattr(inputs, "remote_key", None)
    device = str(device_of(inputs.leaves))
    if by_key and key is not None and not inputs.buffers:
        return {"key": key, "device": device}
    return {"leaves": on_host(inputs.leaves), "tree": inputs.tree, "buffers": sorted(inputs.buffers),
            "device": device}
