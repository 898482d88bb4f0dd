"""Frames between the measurer and a foreign problem's process (harness/measurer/problem_link.py,
harness/runner/problem_process.py): a length and torch.save's bytes, read back with torch.load(weights_only=True):
tensors, numbers, strings, lists and dicts only, so a frame cannot run code in the process that reads it."""
from __future__ import annotations

import io
import os
import struct

import torch

HEADER = struct.Struct("<Q")


def write_frame(fd: int, value) -> None:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    data = memoryview(buffer.getbuffer())
    _write_all(fd, HEADER.pack(len(data)))
    _write_all(fd, data)


def read_frame(fd: int):
    (size,) = HEADER.unpack(_read_exact(fd, HEADER.size))
    return torch.load(io.BytesIO(_read_exact(fd, size)), weights_only=True)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view[: 1 << 24]):]


def _read_exact(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 24))
        if not chunk:
            raise EOFError("the pipe closed")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)
