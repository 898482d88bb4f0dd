"""Device memory shared between two processes through the CUDA driver's IPC calls (libcuda, via ctypes).

The measurer exports the buffers it writes inputs into, and a word each for the gate and the done signal; the runner
exports the memory its outputs live in; each side opens the other's handles. Only plain data crosses the pipe: a
handle is 64 bytes sent as hex, with an offset and a length, and whoever opens one checks the offset and length
against the size of the mapping it gets back. Both processes use torch's primary context, so the pointers work with
torch's streams and Triton's launches. Streams wait on and write those words with the driver's stream memory
operations (CUDA's interprocess events would need the runner to write /dev/shm, which its jail does not allow).
"""
from __future__ import annotations

import ctypes
import time

HANDLE_BYTES = 64
LAZY_ENABLE_PEER_ACCESS = 1

_STRIDE_TYPES = {
    "float32": "<f4", "float16": "<f2", "bfloat16": "<i2", "float64": "<f8", "int64": "<i8", "int32": "<i4",
    "int16": "<i2", "int8": "|i1", "uint8": "|u1", "bool": "|b1",
}


class IpcError(RuntimeError):
    """A CUDA IPC call failed; str() names the call and the driver's error."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * HANDLE_BYTES)]


class Driver:
    """The few driver calls IPC needs, bound once."""

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise IpcError(f"libcuda.so.1 not found: {exc}") from exc
        self._lib = lib

        def bind(*names):
            for name in names:
                fn = getattr(lib, name, None)
                if fn is not None:
                    fn.restype = ctypes.c_int
                    return fn
            raise IpcError(f"the CUDA driver lacks {names[0]}")

        self.get_mem_handle = bind("cuIpcGetMemHandle")
        self.open_mem_handle = bind("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle")
        self.open_mem_handle.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
        self.close_mem_handle = bind("cuIpcCloseMemHandle")
        self.close_mem_handle.argtypes = [ctypes.c_uint64]
        self.address_range = bind("cuMemGetAddressRange_v2", "cuMemGetAddressRange")
        self.address_range.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                       ctypes.c_uint64]
        self.mem_alloc = bind("cuMemAlloc_v2", "cuMemAlloc")
        self.mem_alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        self.mem_free = bind("cuMemFree_v2", "cuMemFree")
        self.mem_free.argtypes = [ctypes.c_uint64]
        self.copy_async = bind("cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync")
        self.copy_async.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
        self.wait_value = bind("cuStreamWaitValue32_v2", "cuStreamWaitValue32")
        self.wait_value.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        self.write_value = bind("cuStreamWriteValue32_v2", "cuStreamWriteValue32")
        self.write_value.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        self.error_name = lib.cuGetErrorName
        self.error_name.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]

    def check(self, code: int, what: str) -> None:
        if code:
            name = ctypes.c_char_p()
            self.error_name(code, ctypes.byref(name))
            raise IpcError(f"{what} failed: {(name.value or b'CUDA error').decode()} ({code})")


_DRIVER: Driver | None = None


def driver() -> Driver:
    """The bound driver calls, with torch's primary context current on this thread (torch creates it lazily, at
    the first allocation, and the IPC calls need it)."""
    global _DRIVER
    if _DRIVER is None:
        import torch

        torch.empty(1, device="cuda")
        _DRIVER = Driver()
    return _DRIVER


def allocation_of(ptr: int) -> tuple[int, int]:
    """(base, size) of the device allocation that holds ptr."""
    d = driver()
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    d.check(d.address_range(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)), "cuMemGetAddressRange")
    return base.value, size.value


def export(ptr: int) -> tuple[str, int]:
    """(handle as hex, offset of ptr inside the allocation the handle maps)."""
    d = driver()
    base, _ = allocation_of(ptr)
    handle = _Handle()
    d.check(d.get_mem_handle(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
    return ctypes.string_at(ctypes.addressof(handle), HANDLE_BYTES).hex(), ptr - base


class Mapped:
    """Handles opened in this process, each kept open for the process's life (the exporter keeps reusing its memory)."""

    def __init__(self):
        self._open: dict[str, tuple[int, int]] = {}  # handle hex -> (base, size)
        self.opened, self.open_seconds = 0, 0.0  # how many handles were opened, and the time it took

    def open(self, handle_hex: str) -> tuple[int, int]:
        if handle_hex in self._open:
            return self._open[handle_hex]
        raw = bytes.fromhex(handle_hex)
        if len(raw) != HANDLE_BYTES:
            raise IpcError(f"an IPC handle is {HANDLE_BYTES} bytes, not {len(raw)}")
        d = driver()
        ptr = ctypes.c_uint64()
        handle = _Handle.from_buffer_copy(raw)
        started = time.perf_counter()
        d.check(d.open_mem_handle(ctypes.byref(ptr), handle, LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
        self.opened += 1
        self.open_seconds += time.perf_counter() - started
        base, size = allocation_of(ptr.value)
        self._open[handle_hex] = (ptr.value, size if base == ptr.value else size - (ptr.value - base))
        return self._open[handle_hex]

    def pointer(self, handle_hex: str, offset: int, nbytes: int) -> int:
        """The address of [offset, offset + nbytes) in the exporter's allocation, checked against its size."""
        base, size = self.open(handle_hex)
        if offset < 0 or nbytes < 0 or offset + nbytes > size:
            raise IpcError(f"bytes [{offset}, {offset + nbytes}) lie outside the shared allocation of {size} bytes")
        return base + offset


def alloc(nbytes: int) -> int:
    """A device allocation of its own (not from torch's caching allocator, whose segments hold other tensors: a
    handle to one would show the other side everything else in the segment)."""
    d = driver()
    ptr = ctypes.c_uint64()
    d.check(d.mem_alloc(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1))), "cuMemAlloc")
    return ptr.value


def free(ptr: int) -> None:
    driver().mem_free(ctypes.c_uint64(ptr))


def copy_async(dst: int, src: int, nbytes: int, stream: int) -> None:
    d = driver()
    d.check(d.copy_async(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes),
                         ctypes.c_void_p(stream)), "cuMemcpyDtoDAsync")


WAIT_GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ: (int32)(*addr - value) >= 0


def wait_value(stream: int, addr: int, value: int) -> None:
    """The stream waits (in the GPU's front end, no kernel running) until the 32-bit word at addr reaches value."""
    d = driver()
    d.check(d.wait_value(ctypes.c_void_p(stream), ctypes.c_uint64(addr), ctypes.c_uint32(value & 0xFFFFFFFF),
                         ctypes.c_uint(WAIT_GEQ)), "cuStreamWaitValue32")


def write_value(stream: int, addr: int, value: int) -> None:
    """The stream writes value to the 32-bit word at addr when it gets there (after the work queued before)."""
    d = driver()
    d.check(d.write_value(ctypes.c_void_p(stream), ctypes.c_uint64(addr), ctypes.c_uint32(value & 0xFFFFFFFF),
                          ctypes.c_uint(0)), "cuStreamWriteValue32")


class _ArrayView:
    """A `__cuda_array_interface__` over memory this process did not allocate (torch.as_tensor wraps it)."""

    def __init__(self, ptr: int, shape, dtype: str):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": _STRIDE_TYPES[dtype],
                                         "data": (ptr, False), "version": 2, "strides": None}


def tensor_at(ptr: int, shape, dtype: str):
    """A contiguous torch tensor viewing device memory at ptr (no copy; the memory must outlive it)."""
    import torch

    t = torch.as_tensor(_ArrayView(ptr, shape, dtype), device="cuda")
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t
