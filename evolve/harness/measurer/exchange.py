"""The measurer's side of a call into the runner: inputs placed where the runner can read them, outputs read back by
the measurer itself, and (on a GPU) the timed window.

Inputs are made in the measurer's private memory. For a call they are copied into shared buffers (device memory of
the measurer's own, exported through CUDA IPC, or files in a private shared-memory folder on the CPU); the runner
maps those, calls the candidate, and says where its outputs are. The measurer reads the outputs' bytes (a device
copy out of the runner's memory, or the output files it handed out, filled with NaN beforehand) and compares them;
it never believes a figure the runner states.

The timed window on a GPU, all on the measurer's stream: the runner is sent the call first and queues its calls
behind the gate (its stream waits for the gate word); once it has answered, the measurer flushes L2, spins briefly
(long enough for its own launches to be queued, so the GPU never waits for this host inside the window), records
event A, copies the inputs into the shared buffers and sets the gate word to the call's number; the runner's stream
runs its K calls and sets the done word; the measurer's stream waits for that, reads every output back, then event B.
A runner that has not answered within RUNNER_WAIT_S (a candidate that waits for the GPU while it queues, as an
autotuner does) gets the gate opened anyway and the window is run again. Everything from A to B is charged: the
runner cannot see the inputs before A (they are not in shared memory yet), and whatever it has not finished when the
read-back copies its outputs is wrong. The measurer then subtracts what the same window costs with no work in it (its
own copies and read-back, measured with no runner; the two switches between the processes' CUDA contexts, measured
with the runner before it imported the candidate), each the fastest of several runs, so no time the candidate did not
spend is credited to it.
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch

from ..shared.formats.base import dtype_name, itemsize, poison
from ..shared.privilege import UID_ENV
from ..shared.wire import Closed, Malformed

L2_FLUSH_BYTES = 256 * 1024 * 1024  # > 60 MB L2 of an H200 / 50 MB of an H100
SPIN_CYCLES_PER_MS = 2.0e6  # torch.cuda._sleep counts SM cycles; ~2 GHz on a Hopper at full clock
MIN_SPIN_MS = 2.0
RUNNER_WAIT_S = 0.25  # a window waits this long for the runner to have queued its calls, then opens the gate anyway


class Fail(Exception):
    """The candidate's call failed a check; str() is the reason, details go into the rung's figures."""

    def __init__(self, reason: str, details: dict | None = None):
        super().__init__(reason)
        self.details = details or {}


class ProblemFault(Exception):
    """The problem's input generator failed while the measurer made a case's inputs. Not a Fail: no rung takes it as
    the candidate's; the parent decides whose fault it is by making the same inputs with no candidate loaded."""

    def __init__(self, reason: str, case: str, seed: int):
        super().__init__(reason)
        self.details = {"case": case, "seed": seed}


class RunnerLost(Exception):
    """The runner stopped answering (it died, or closed its pipe); str() says what the measurer saw."""

    def __init__(self, detail: str, runner: str = ""):
        super().__init__(detail)
        self.runner = runner


FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def nbytes_of(shape, dtype: str) -> int:
    return math.prod(shape) * itemsize(dtype)


# shared input memory is handed out from slabs of this size: one IPC handle each, not one per buffer
SLAB_BYTES = 1 << 30
SLAB_ALIGN = 512


class Slab:
    """One device allocation of the measurer's (never a segment of torch's allocator, which holds other tensors),
    exported once: the runner opens each slab once however many buffers it is cut into. Everything in a slab is an
    input the runner is given, has been given, or stale bytes of one (the inputs of a window are copied in only when
    the window opens), so seeing the whole slab shows it nothing it does not see anyway."""

    def __init__(self, nbytes: int):
        from ..shared import cuda_ipc

        self.nbytes = nbytes
        self.ptr = cuda_ipc.alloc(nbytes)
        self.handle, _ = cuda_ipc.export(self.ptr)
        self.used = 0

    def cut(self, nbytes: int) -> int | None:
        """The offset of nbytes more of this slab, or None where they do not fit."""
        start = -(-self.used // SLAB_ALIGN) * SLAB_ALIGN
        if start + nbytes > self.nbytes:
            return None
        self.used = start + nbytes
        return start


def _shared_file(folder: str, nbytes: int):
    """A new file of nbytes under a name no one could have guessed and made first (never opened through a link, never
    an existing file), and this process's own shared mapping of it: (path for the runner, mapping)."""
    import mmap
    import secrets

    path = str(Path(folder) / f"buffer-{secrets.token_hex(12)}.bin")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        owner = os.environ.get(UID_ENV)  # the runner runs as this user (harness/shared/privilege.py): the file is its
        if owner:
            os.fchown(fd, int(owner), int(owner))
        os.ftruncate(fd, nbytes)
        return path, mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)


class Buffer:
    """One shared buffer: `desc` tells the runner where it is, `view` is the measurer's own tensor over it."""

    def __init__(self, pool, nbytes: int):
        self.nbytes = nbytes
        self.pool = pool
        if pool.mode == "gpu":
            self.slab, self.offset = pool.cut(max(nbytes, 1))
            self.ptr = self.slab.ptr + self.offset
            self.handle = self.slab.handle
            self.path = None
        else:
            pool.count += 1
            self.path, self.map = _shared_file(pool.folder, max(nbytes, 1))
            self._files: dict = {}

    def desc(self, shape, dtype: str) -> dict:
        base = {"nbytes": self.nbytes, "shape": list(shape), "dtype": dtype}
        if self.pool.mode == "gpu":
            return {"handle": self.handle, "offset": self.offset, **base}
        return {"path": self.path, **base}

    def view(self, shape, dtype: str):
        if self.pool.mode == "gpu":
            from ..shared import cuda_ipc

            return cuda_ipc.tensor_at(self.ptr, shape, dtype)
        if dtype not in self._files:  # through this process's own mapping, never the path (a runner may replace it)
            numel = self.nbytes // itemsize(dtype)
            self._files[dtype] = torch.frombuffer(self.map, dtype=getattr(torch, dtype), count=numel)
        return self._files[dtype][: math.prod(shape)].view(list(shape))

    def free(self) -> None:
        if self.pool.mode != "gpu":
            self._files.clear()
            try:
                self.map.close()
            except BufferError:  # a view still alive: the mapping goes with it
                pass
            try:
                os.unlink(self.path)  # a name in a folder of the measurer's own (unlink follows no link)
            except OSError:
                pass


class Pool:
    """Shared buffers by size, reused from call to call (the runner keeps each slab or file mapped once)."""

    def __init__(self, mode: str, folder: str):
        self.mode, self.folder = mode, folder
        self.free_list: dict[int, list[Buffer]] = {}
        self.count = 0
        self.handles: set[str] = set()
        self.slabs: list[Slab] = []
        self.lent = 0

    def cut(self, nbytes: int) -> tuple[Slab, int]:
        for slab in self.slabs[-2:]:
            offset = slab.cut(nbytes)
            if offset is not None:
                return slab, offset
        torch.cuda.empty_cache()  # torch's cached blocks are no use to a slab, which is allocated outside its cache
        slab = Slab(max(SLAB_BYTES, nbytes))
        self.slabs.append(slab)
        self.handles.add(slab.handle)
        return slab, slab.cut(nbytes)

    def take(self, nbytes: int) -> Buffer:
        stack = self.free_list.get(nbytes)
        buf = stack.pop() if stack else Buffer(self, nbytes)
        self.lent += 1
        return buf

    def give(self, bufs) -> None:
        for buf in bufs:
            self.lent -= 1
            self.free_list.setdefault(buf.nbytes, []).append(buf)

    def trim(self) -> None:
        """Free every buffer, where none is lent (between rungs)."""
        if self.lent:
            return
        from ..shared import cuda_ipc

        for stack in self.free_list.values():
            for buf in stack:
                buf.free()
        self.free_list.clear()
        for slab in self.slabs:
            cuda_ipc.free(slab.ptr)
        self.slabs.clear()


class CallSet:
    """One call's inputs (private tensors or plain values), its expected outputs [(shape, dtype)] and, where the
    candidate takes the inputs' structure as one argument, that structure (a pytree spec)."""

    def __init__(self, inputs: tuple, expects: list, tree: str | None = None, buffers: frozenset = frozenset()):
        self.inputs, self.expects, self.tree = inputs, expects, tree
        self.buffers = buffers  # input indices that are output buffers (formats/base.py Inputs): an output may be one
        self.staged: dict = {}  # input index -> the shared Buffer it was placed in, during a call


class Caller:
    """Calls into one runner. `call` returns the outputs read back, one tuple of measurer-owned tensors per set."""

    def __init__(self, name: str, link, pool: Pool, device):
        self.name, self.link, self.pool, self.device = name, link, pool, device
        self.mode = "gpu" if name == "gpu" else "cpu"
        self.any_float = False  # a float output may come in another float dtype (the format's check judges it)
        self.calls = 0
        self.mapped = None
        self.gate_addr = self.done_addr = 0
        self.window = None

    # -- messages -----------------------------------------------------------------------------------------------------
    def recv(self, *kinds: str) -> dict:
        try:
            message = self.link.recv()
        except Malformed as exc:
            raise Fail(f"the runner sent a malformed message ({exc}): treated as the candidate's failure") from None
        except Closed as exc:
            raise RunnerLost(str(exc), self.name) from None
        if message["kind"] == "failed":
            details = {"log": message["log"]} if message["log"] else {}
            raise Fail(message["reason"] or "the runner reported a failure without a reason", details)
        if message["kind"] not in kinds:
            raise Fail(f"the runner sent '{message['kind']}' where '{kinds[0]}' was due")
        return message

    def send(self, message: dict) -> None:
        try:
            self.link.send(message)
        except Closed as exc:
            raise RunnerLost(str(exc), self.name) from None

    # -- GPU set-up, before the candidate is imported ---------------------------------------------------------------
    def connect_gpu(self) -> None:
        """Share the two signal words: the runner's stream waits for the gate word to reach a window's number before
        it calls anything, and writes the done word when its calls are queued behind it."""
        from ..shared import cuda_ipc

        self.mapped = cuda_ipc.Mapped()
        self.signal_ptr = cuda_ipc.alloc(8)
        cuda_ipc.tensor_at(self.signal_ptr, (2,), "int32").zero_()
        torch.cuda.synchronize()
        self.gate_addr, self.done_addr = self.signal_ptr, self.signal_ptr + 4
        self.send({"kind": "gate", "handle": cuda_ipc.export(self.signal_ptr)[0]})
        self.recv("ack")
        self.window = Window(self)

    def answered(self, timeout_s: float) -> bool:
        """Whether the runner's answer to the call is here, or arrives within timeout_s."""
        try:
            return self.link.ready(timeout_s)
        except Closed as exc:
            raise RunnerLost(str(exc), self.name) from None

    def wait_done(self, stream) -> None:
        from ..shared import cuda_ipc

        cuda_ipc.wait_value(stream.cuda_stream, self.done_addr, self.calls)

    def release(self) -> None:
        """Unblock the measurer's own stream when the runner will never write the done word (it died): write it
        from a stream of the measurer's, so nothing queued behind the wait hangs the process."""
        from ..shared import cuda_ipc

        if self.window is None:
            return
        side = torch.cuda.Stream()
        cuda_ipc.write_value(side.cuda_stream, self.done_addr, self.calls)
        side.synchronize()

    # -- a call -------------------------------------------------------------------------------------------------------
    def call(self, sets: list, purpose: str, timed: bool = False, poison: bool = False, dump: bool = False):
        """Place the inputs, have the runner call custom_kernel on each set, read the outputs back.

        purpose 'compile' returns the runner's compile report instead of outputs. timed returns (outputs, figures):
        the window on a GPU, the host clock around the call on the CPU."""
        self.calls += 1
        taken, staged, guarded, entries, out_files = [], [], [], [], []
        for s in sets:
            descs = []
            s.staged = {}
            for index, value in enumerate(s.inputs):
                if isinstance(value, torch.Tensor):
                    buf = self.pool.take(value.numel() * value.element_size())
                    taken.append(buf)
                    staged.append((buf, value))
                    s.staged[index] = buf
                    if index not in s.buffers:  # an output buffer is written: only the other inputs must not be
                        guarded.append((buf, value))
                    descs.append(buf.desc(value.shape, dtype_name(value)))
                else:
                    descs.append({"value": value})
            expect = [{"shape": list(shape), "dtype": dtype, "nbytes": nbytes_of(shape, dtype),
                       **({"any_float": True} if self.any_float and dtype in FLOAT_DTYPES else {})}
                      for shape, dtype in s.expects]
            entry = {"inputs": descs, "expect": expect, "tree": s.tree, "buffers": sorted(s.buffers)}
            if self.mode != "gpu":
                files = [self.pool.take(e["nbytes"]) for e in expect]
                taken.extend(files)
                out_files.append(files)
                entry["output_files"] = [b.desc(e["shape"], e["dtype"]) for b, e in zip(files, expect)]
            entries.append(entry)
        message = {"kind": "call", "call": self.calls, "purpose": purpose, "sets": entries, "gate": bool(timed),
                   "poison": poison, "dump": dump}
        try:
            if purpose == "compile":
                for buf, value in staged:
                    buf.view(value.shape, dtype_name(value)).copy_(value)
                if self.mode == "gpu":
                    torch.cuda.synchronize()
                self.send(message)
                return self.recv("compiled")
            if self.mode != "gpu":
                outs, figures = self._cpu_call(message, staged, sets, out_files)
            elif timed:
                outs, figures = self.window.run(message, staged, sets)
            else:
                outs, figures = self._gpu_call(message, staged, sets), None
            self._inputs_unchanged(guarded)
            self.recv("checked")
            return (outs, figures) if timed else outs
        finally:
            self.pool.give(taken)

    def _inputs_unchanged(self, staged) -> None:
        """Bit for bit (an input may hold NaN, never equal to itself), every input of the call, read once."""
        changed = None
        for buf, value in staged:
            now = buf.view(value.shape, dtype_name(value)).reshape(-1).view(torch.uint8)
            differs = torch.ne(now, value.reshape(-1).view(torch.uint8)).any()
            changed = differs if changed is None else torch.logical_or(changed, differs)
        if changed is not None and bool(changed):
            raise Fail("custom_kernel modified its input")

    def _cpu_call(self, message, staged, sets, out_files):
        for buf, value in staged:
            buf.view(value.shape, dtype_name(value)).copy_(value)
        for files, s in zip(out_files, sets):
            for buf, (shape, dtype) in zip(files, s.expects):
                poison(buf.view(shape, dtype))
        started = time.perf_counter()
        self.send(message)
        reply = self.recv("outputs")
        elapsed = time.perf_counter() - started
        self._check_described(reply, sets)
        outs = [tuple(buf.view(shape, dtype).clone() for buf, (shape, dtype) in zip(files, s.expects))
                for files, s in zip(out_files, sets)]
        return outs, {"ms": elapsed * 1e3}

    def _check_described(self, reply: dict, sets) -> None:
        if reply["call"] != self.calls or len(reply["outputs"]) != len(sets):
            raise Fail("the runner answered for another call or another number of input sets")
        for described, s in zip(reply["outputs"], sets):
            if len(described) != len(s.expects):
                raise Fail(f"returned {len(described)} output(s), expected {len(s.expects)}")

    def _pointers(self, reply: dict, sets) -> list:
        """The device addresses of every output, each checked against the size of the memory it lies in."""
        from ..shared.cuda_ipc import IpcError

        self._check_described(reply, sets)
        pointers = []
        for described, s in zip(reply["outputs"], sets):
            row = []
            for d, (shape, dtype) in zip(described, s.expects):
                read_as = self._read_as(d, dtype)
                want = nbytes_of(shape, read_as)
                if d["nbytes"] != want:
                    raise Fail(f"an output of {d['nbytes']} bytes, expected {want} ({read_as} {tuple(shape)})")
                if "input" in d:  # the runner says it returned an output buffer the task handed out
                    buf = s.staged.get(d["input"]) if type(d["input"]) is int and d["input"] in s.buffers else None
                    if buf is None or buf.nbytes != want:
                        raise Fail("output aliases an input; return a new tensor")
                    row.append((buf.ptr, read_as))  # read from the measurer's own buffer, NaN unless written
                    continue
                if d["handle"] in self.pool.handles:
                    raise Fail("output aliases an input; return a new tensor")
                try:
                    row.append((self.mapped.pointer(d["handle"], d["offset"], want), read_as))
                except IpcError as exc:
                    raise Fail(f"the output's memory could not be read: {exc}") from None
            pointers.append(row)
        return pointers

    def destinations(self, sets) -> list:
        """The measurer's own tensors the outputs are read back into, allocated before any window opens."""
        return [tuple(torch.empty(shape, dtype=getattr(torch, dtype), device=self.device) for shape, dtype in s.expects)
                for s in sets]

    def _read_as(self, described: dict, dtype: str) -> str:
        """The dtype an output's bytes are read as: the expected one, or (any_float) the other float dtype the runner
        says it has; a wrong word only makes the values garbage, which the checks reject."""
        said = described.get("dtype")
        return said if self.any_float and dtype in FLOAT_DTYPES and said in FLOAT_DTYPES else dtype

    @staticmethod
    def fitted(dests, pointers) -> list:
        """The measurer's tensors for these outputs, each in the dtype its bytes are read as (`_read_as`): `dests`,
        or a new one where a float output came in another float dtype. Called before a window opens where it can."""
        return [tuple(t if dtype_name(t) == read_as else torch.empty(t.shape, dtype=getattr(torch, read_as),
                                                                      device=t.device)
                      for (_, read_as), t in zip(row, mine)) for row, mine in zip(pointers, dests)]

    @staticmethod
    def _read_back(pointers, dests, stream) -> list:
        """Each output's bytes into the measurer's own tensor (`fitted` to the dtype it is read as)."""
        from ..shared import cuda_ipc

        for row, mine in zip(pointers, dests):
            for (ptr, _), t in zip(row, mine):
                cuda_ipc.copy_async(t.data_ptr(), ptr, t.numel() * t.element_size(), stream.cuda_stream)
        return dests

    def _gpu_call(self, message, staged, sets):
        stream = torch.cuda.current_stream()
        dests = self.destinations(sets)
        for buf, value in staged:
            buf.view(value.shape, dtype_name(value)).copy_(value)
        torch.cuda.synchronize()
        self.send(message)
        self.wait_done(stream)
        reply = self.recv("outputs")
        pointers = self._pointers(reply, sets)
        outs = self._read_back(pointers, self.fitted(dests, pointers), stream)
        torch.cuda.synchronize()
        return outs


class Window:
    """The timed window on a GPU (see the module docstring), its calibration and its spin."""

    def __init__(self, caller: Caller):
        self.caller = caller
        self.flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device=caller.device)
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        self.spin_ms = 3.0
        self.op_ms = 0.02  # this process's host time to queue one op of a window, as last seen
        self.hops_ms: float | None = None  # the two context switches of an empty window, fastest seen

    def _open(self, staged, synchronize: bool = True) -> None:
        if synchronize:
            torch.cuda.synchronize()
        self.flush.zero_()
        torch.cuda._sleep(int(self.spin_ms * SPIN_CYCLES_PER_MS))
        self.events[0].record()
        for buf, value in staged:
            buf.view(value.shape, dtype_name(value)).copy_(value)
        self.events[1].record()

    def run(self, message: dict, staged, sets, attempts: int = 4):
        """One window: (outputs, figures). A window the GPU may have waited in (the runner had not queued its calls
        within RUNNER_WAIT_S, or the spin ran out before this process had queued its own work) is run again, the
        last attempt's figure kept as it is (never shorter than the work: only ever too long)."""
        from ..shared import cuda_ipc

        caller = self.caller
        stream = torch.cuda.current_stream()
        dests = caller.destinations(sets)
        ops = len(staged) + sum(len(s.expects) for s in sets) + 4  # the launches this process queues in the window
        for attempt in range(attempts):
            torch.cuda.synchronize()
            started = time.perf_counter()
            caller.send(message)
            answered = caller.answered(RUNNER_WAIT_S)
            exchange_ms = (time.perf_counter() - started) * 1e3
            # the spin covers this process's own launches, with room to spare: its time per launch so far, times these
            self.spin_ms = spun = min(max(1.5 * self.op_ms * ops + 0.5, MIN_SPIN_MS), 500.0)
            pointers = None
            if answered:  # where the outputs are, known before the window opens (opening new IPC handles is slow)
                try:
                    pointers = caller._pointers(caller.recv("outputs"), sets)
                except Fail:
                    cuda_ipc.write_value(stream.cuda_stream, caller.gate_addr, caller.calls)  # let its calls go
                    raise
                dests = caller.fitted(dests, pointers)  # no allocation inside the window
            queueing = time.perf_counter()
            self._open(staged, synchronize=False)
            cuda_ipc.write_value(stream.cuda_stream, caller.gate_addr, caller.calls)
            caller.wait_done(stream)
            self.events[2].record()
            if pointers is None:  # a late window, run again
                pointers = caller._pointers(caller.recv("outputs"), sets)
                dests = caller.fitted(dests, pointers)
            outs = caller._read_back(pointers, dests, stream)
            self.events[3].record()
            queued_ms = (time.perf_counter() - queueing) * 1e3
            # the GPU reached event A before this process had queued the window's last op: it may have waited
            late = not answered or self.events[0].query()
            torch.cuda.synchronize()
            total = self.events[0].elapsed_time(self.events[3])
            self.op_ms = queued_ms / ops * (2 if late and answered else 1)
            if not late or attempt == attempts - 1:
                # Its parts, for the record only: the verdict's figure is the whole window less its calibrated cost.
                parts = [self.events[i].elapsed_time(self.events[i + 1]) for i in range(3)]
                return outs, {"ms": total, "late": attempt, "exchange_ms": exchange_ms, "spin_ms": spun,
                              "copies_ms": parts[0], "runner_ms": parts[1], "read_ms": parts[2]}
            caller.recv("checked")  # the discarded attempt's own report, before the call is made again
            caller.calls += 1
            message = {**message, "call": caller.calls}
        raise AssertionError("unreachable")

    def calibrate_hops(self, reps: int = 9) -> float:
        """Windows with the runner (before the candidate is imported) holding one tiny kernel of its own: the two
        switches between the processes' CUDA contexts, and that kernel."""
        samples = []
        for _ in range(reps):
            outs, figures = self.caller.call([], "time", timed=True)
            samples.append(figures["ms"])
        self.hops_ms = min(samples[1:])
        return self.hops_ms

    def calibrate_copies(self, sets: list, reps: int = 5) -> float:
        """The measurer's own part of a window of these sets (copies in, read-back), with no runner: the fastest."""
        from ..shared import cuda_ipc

        caller, pool = self.caller, self.caller.pool
        staged, taken = [], []
        for s in sets:
            for value in s.inputs:
                if isinstance(value, torch.Tensor):
                    buf = pool.take(value.numel() * value.element_size())
                    taken.append(buf)
                    staged.append((buf, value))
        outputs, dests = caller.destinations(sets), caller.destinations(sets)  # stand-ins for the runner's outputs
        pointers = [[(o.data_ptr(), dtype_name(o)) for o in row] for row in outputs]
        stream = torch.cuda.current_stream()
        try:
            samples, late = [], []
            for _ in range(2 * reps):
                spun = self.spin_ms
                queueing = time.perf_counter()
                self._open(staged)
                cuda_ipc.write_value(stream.cuda_stream, caller.gate_addr, caller.calls)
                self.events[2].record()
                caller._read_back(pointers, dests, stream)
                self.events[3].record()
                queued_ms = (time.perf_counter() - queueing) * 1e3
                # a sample whose spin ran out before its ops were queued timed this host too: longer, not kept
                ran_out = self.events[0].query()
                torch.cuda.synchronize()
                (late if ran_out else samples).append(self.events[0].elapsed_time(self.events[3]))
                self.spin_ms = min(max(1.5 * queued_ms + 0.5, MIN_SPIN_MS, 2 * spun if ran_out else 0), 500.0)
                if len(samples) == reps:
                    break
            return min(samples or late)
        finally:
            pool.give(taken)
