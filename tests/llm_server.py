"""A scripted OpenAI-compatible chat server for tests: litellm really talks HTTP to it, the script decides the answers.

    with ScriptedLLM() as llm:
        llm.enqueue("```python\\ndef custom_kernel(x): ...\\n```")   # a reply
        llm.enqueue(Status(429))                                      # an HTTP error (429 carries retry-after: 0)
        llm.enqueue(Hang(2.0))                                        # sleep, then close the connection unanswered
        llm.enqueue(ToolCalls((("search_context", {"query": "x"}),)))  # a function call (OpenAI tool_calls format)
        llm.enqueue_for("gpt-4o", "```python ...```")                 # a reply for requests naming this model only
        litellm.completion(model="openai/fake", api_base=llm.url, api_key="x", messages=[...])
        llm.requests[-1]["messages"]                                  # every JSON body received

POST /v1/chat/completions pops the next item of the queue of the model the request names (as sent: `gpt-4o` for
litellm's `openai/gpt-4o`), where one was enqueued for it, else of the shared queue; an empty queue answers 500
("script exhausted"). GET /v1/models lists one model. Token counts in `usage` are word counts, so they are
deterministic. Stdlib only.

The `llm_server` fixture yields a started server; import it into a test module (or list this module in
`pytest_plugins`) to use it.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass(frozen=True)
class Status:
    """Answer with this HTTP status; body is a dict (sent as JSON) or str, default an OpenAI-style error object."""

    code: int
    body: dict | str | None = None


@dataclass(frozen=True)
class ToolCalls:
    """Answer with these function calls, in OpenAI's format: (name, arguments dict) pairs; `content` optional."""

    calls: tuple
    content: str | None = None


@dataclass(frozen=True)
class Hang:
    """Sleep this long (or until the server stops), then close the connection without an answer."""

    seconds: float


def _words(text) -> int:
    if isinstance(text, list):  # content parts: [{"type": "text", "text": ...}]
        text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    return len(str(text or "").split())


class ScriptedLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []  # request headers, lower-cased names, in order
        self._queue: deque = deque()
        self._by_model: dict[str, deque] = {}  # the model a request names -> its own answers (enqueue_for)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- script ---------------------------------------------------------------------------------------------------
    def enqueue(self, *items) -> None:
        self._put(self._queue, items)

    def enqueue_for(self, model: str, *items) -> None:
        """Answers for the requests naming `model` only (as the server receives it, without litellm's provider
        prefix); the shared queue answers the others, and this model's once its own are spent."""
        with self._lock:
            queue = self._by_model.setdefault(model, deque())
        self._put(queue, items)

    def _put(self, queue: deque, items) -> None:
        with self._lock:
            for item in items:
                if not isinstance(item, (str, Status, Hang, ToolCalls)):
                    raise TypeError(f"enqueue takes str, Status, Hang or ToolCalls, not {type(item).__name__}")
                queue.append(item)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._queue) + sum(len(q) for q in self._by_model.values())

    def _next(self, body: dict, headers: dict):
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            queue = self._by_model.get(body.get("model")) or self._queue
            return queue.popleft() if queue else None

    # -- lifecycle ------------------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("ScriptedLLM is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "ScriptedLLM":
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes handlers that are hanging
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> "ScriptedLLM":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- answers --------------------------------------------------------------------------------------------------
    def _completion(self, body: dict, content) -> dict:
        prompt_tokens = sum(_words(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict))
        if isinstance(content, ToolCalls):
            calls = [{"id": f"call_{next(self._ids)}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}} for name, args in content.calls]
            message = {"role": "assistant", "content": content.content, "tool_calls": calls}
            completion_tokens = _words(content.content) + sum(_words(c["function"]["arguments"]) for c in calls)
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": content}
            completion_tokens = _words(content)
            finish = "stop"
        return {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _error_body(code: int, message: str) -> dict:
    kind = "rate_limit_error" if code == 429 else ("server_error" if code >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": str(code)}}


def _handler_for(llm: ScriptedLLM):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - keep test output quiet
            pass

        def _send(self, code: int, payload, headers: dict | None = None) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

        def do_GET(self):  # noqa: N802
            if self.path.rstrip("/").endswith("/models"):
                model = {"id": "scripted", "object": "model", "created": 0, "owned_by": "tests"}
                self._send(200, {"object": "list", "data": [model]})
            else:
                self._send(404, _error_body(404, f"no route GET {self.path}"))

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, _error_body(404, f"no route POST {self.path}"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._send(400, _error_body(400, f"body is not JSON: {exc}"))
                return
            item = llm._next(body, {k.lower(): v for k, v in self.headers.items()})
            if item is None:
                self._send(500, _error_body(500, "ScriptedLLM: the script is exhausted (no reply enqueued)"))
            elif isinstance(item, Hang):
                llm._stopping.wait(item.seconds)
                self.close_connection = True  # no answer at all
            elif isinstance(item, Status):
                payload = item.body if item.body is not None else _error_body(item.code, f"scripted {item.code}")
                extra = {"retry-after": "0"} if item.code == 429 else None
                self._send(item.code, payload, extra)
            else:
                self._send(200, llm._completion(body, item))

    return Handler


@pytest.fixture
def llm_server():
    """A started ScriptedLLM, stopped after the test."""
    with ScriptedLLM() as server:
        yield server
