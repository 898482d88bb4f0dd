"""The measurer's channel to the parent: JSON lines signed with a key that reached the measurer on its job pipe (the
runners have neither the pipe nor the key)."""
from __future__ import annotations

import hashlib
import hmac
import json
import os


class Channel:
    """Signed JSON lines to the parent."""

    def __init__(self, fd: int, key: bytes):
        self.fd, self.key = fd, key

    def send(self, message: dict) -> None:
        payload = json.dumps(message, default=str).encode()
        mac = hmac.new(self.key, payload, hashlib.sha256).hexdigest().encode()
        data = mac + b" " + payload + b"\n"
        while data:
            data = data[os.write(self.fd, data):]

    def rung(self, name, ok, reason=None, seconds=0.0, **figures):
        self.send({"kind": "rung", "name": name, "ok": bool(ok), "reason": reason, "seconds": round(seconds, 4),
                   "metrics": figures})

    def skip(self, name, reason):
        """A rung this mode cannot run (never a pass: a verdict passes only once the benchmark has)."""
        self.send({"kind": "skip", "name": name, "reason": reason})


class BufferedChannel(Channel):
    """Messages kept back, to go to the parent later in order (or never)."""

    def __init__(self):
        self.messages: list[dict] = []

    def send(self, message: dict) -> None:
        self.messages.append(message)

    def replay(self, channel: Channel) -> None:
        for message in self.messages:
            channel.send(message)
