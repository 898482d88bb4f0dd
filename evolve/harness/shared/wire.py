"""Messages between the harness's processes: JSON lines over pipes, each checked against a schema on arrival.

Whatever arrives from a runner is candidate-controlled bytes: a line that is not JSON, is too long, has a field
missing, extra or of the wrong type, or a number out of range, raises Malformed with a reason, which the caller turns
into a failed rung. Nothing a message says is ever executed or used as a path, and no message can make the reader
raise anything else.
"""
from __future__ import annotations

import json
import os
import select
import time

MAX_LINE = 1 << 22  # 4 MiB: a compile log is long, a forged flood is not read past this


class Malformed(Exception):
    """A message broke the protocol; str() says how."""


class Closed(Exception):
    """The other side closed its end or sent nothing in time; str() says which."""


# A schema is a dict {field: spec}; a spec is a type (int, float, bool, str), a tuple (spec, ...) meaning "any of",
# a list [spec] meaning a list of such values, a dict (nested schema), None (JSON null) or "any" (any JSON value,
# used only for figures that are passed on as data, never interpreted).
def _ok(value, spec, where: str, depth: int = 0) -> None:
    if depth > 8:
        raise Malformed(f"{where}: nested too deep")
    if spec == "any":
        return
    if spec is None:
        if value is not None:
            raise Malformed(f"{where}: expected null")
        return
    if isinstance(spec, tuple):
        errors = []
        for option in spec:
            try:
                _ok(value, option, where, depth + 1)
                return
            except Malformed as exc:
                errors.append(str(exc))
        raise Malformed(errors[0] if errors else f"{where}: no option matched")
    if isinstance(spec, list):
        if type(value) is not list:
            raise Malformed(f"{where}: expected a list")
        if len(value) > 4096:
            raise Malformed(f"{where}: list of {len(value)} items is too long")
        for index, item in enumerate(value):
            _ok(item, spec[0], f"{where}[{index}]", depth + 1)
        return
    if isinstance(spec, dict):
        check(value, spec, where, depth + 1)
        return
    if spec is float:
        if type(value) not in (int, float) or value != value or value in (float("inf"), float("-inf")):
            raise Malformed(f"{where}: expected a finite number")
        return
    if spec is int:
        if type(value) is not int or abs(value) > 1 << 62:
            raise Malformed(f"{where}: expected an integer")
        return
    if spec is str:
        if type(value) is not str or len(value) > 100_000:
            raise Malformed(f"{where}: expected a string of at most 100000 characters")
        return
    if type(value) is not spec:
        raise Malformed(f"{where}: expected {spec.__name__}")


def check(message, schema: dict, where: str = "message", depth: int = 0) -> dict:
    """message, if it has exactly the schema's fields with the right types; else Malformed."""
    if type(message) is not dict:
        raise Malformed(f"{where}: expected an object")
    missing = [k for k in schema if k not in message]
    extra = [k for k in message if k not in schema]
    if missing:
        raise Malformed(f"{where}: missing field {missing[0]!r}")
    if extra:
        raise Malformed(f"{where}: unexpected field {str(extra[0])[:40]!r}")
    for key, spec in schema.items():
        _ok(message[key], spec, f"{where}.{key}", depth)
    return message


def parse(line: bytes, schemas: dict) -> dict:
    """One line checked against the schema of its kind (schemas: kind -> schema, each including 'kind')."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"not JSON: {str(exc)[:80]}") from None
    if type(message) is not dict or type(message.get("kind")) is not str:
        raise Malformed("a message must be an object with a string 'kind'")
    schema = schemas.get(message["kind"])
    if schema is None:
        raise Malformed(f"unknown message kind {message['kind'][:40]!r}")
    return check(message, schema, message["kind"][:40])


class Link:
    """One end of a two-pipe connection: send() writes a line, recv() reads one and checks it."""

    def __init__(self, read_fd: int, write_fd: int, schemas: dict | None = None):
        self.read_fd, self.write_fd = read_fd, write_fd
        self.schemas = schemas
        self._buffer = b""

    def send(self, message: dict) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        try:
            while data:
                data = data[os.write(self.write_fd, data):]
        except (BrokenPipeError, OSError) as exc:
            raise Closed(f"the other side closed the pipe ({type(exc).__name__})") from None

    def _fill(self, deadline: float | None) -> bool:
        """Read until a whole line is buffered (True) or the deadline passes (False)."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise Malformed(f"a message longer than {MAX_LINE} bytes")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise Closed("the other side closed the pipe")
            self._buffer += chunk
        return True

    def recv(self, timeout_s: float | None = None) -> dict:
        if not self._fill(None if timeout_s is None else time.monotonic() + timeout_s):
            raise Closed(f"no message within {timeout_s:g} s")
        line, self._buffer = self._buffer.split(b"\n", 1)
        if self.schemas is None:
            return json.loads(line)
        return parse(line, self.schemas)

    def ready(self, timeout_s: float) -> bool:
        """Whether a whole message is here or arrives within timeout_s (it is kept for recv, not read)."""
        try:
            return self._fill(time.monotonic() + timeout_s)
        except Malformed:
            return True  # recv says what is wrong with it

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def short_error(exc: BaseException) -> str:
    """An exception in one line: its type and the first line of its message, at most 400 characters."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__
