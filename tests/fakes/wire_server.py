"""A local HTTP server that speaks the Anthropic and OpenAI wire formats, with faults.

The real SDKs talk to it over a real socket, so a test exercises everything the
SDK does (headers, JSON encoding, status handling, timeouts). It records every
request and answers from a queue of scripted `Reply`s; when the queue is empty it
asks `responder` (if given), else answers 500 so that a missing script is loud.

    with WireServer() as server:
        server.enqueue(status_reply(429, retry_after=0.05), anthropic_reply(text="hi"))
        spec = ModelSpec(provider="anthropic", model="m", base_url=server.base_url)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable


@dataclass
class RecordedRequest:
    """One request as the server saw it. Header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it was not JSON


@dataclass
class Reply:
    """What the server does with one request: answer, stall, or hang up."""

    status: int = 200
    body: Any = None  # dict/list: sent as JSON; str/bytes: sent as is
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    delay_s: float = 0.0  # wait this long before answering (longer than the client's timeout: a timeout)
    drop: bool = False  # close the connection without answering


Responder = Callable[[RecordedRequest], Reply]


class WireServer:
    """A threaded HTTP server on 127.0.0.1 with an ephemeral port; a context manager."""

    def __init__(self, replies: Iterable[Reply] = (), responder: Responder | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        # Handler threads that are still sleeping through a "timeout" must not hold up shutdown.
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT` (Anthropic's base URL; add `/v1` for OpenAI)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def enqueue(self, *replies: Reply) -> None:
        """Add replies to the end of the queue, served in order."""
        with self._lock:
            self.replies.extend(replies)

    def __enter__(self) -> WireServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return status_reply(500, message="the fake server has no scripted reply left")

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _handler_class(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so a pooled keep-alive connection can
        # never be the cause of a failure and attempt counts stay exact.
        protocol_version = "HTTP/1.0"

        def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8", "replace")
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server._next_reply(RecordedRequest("POST", self.path, headers, body))
            self._answer(reply)

        def _answer(self, reply: Reply) -> None:
            try:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
            finally:
                # A request stops counting as in flight before its first byte goes back: once the
                # client has the reply it may send the next one, which must not find this one
                # still counted (the race that made a client limit of 3 read as 4 under load).
                server._done()
            if reply.drop:
                # Reset rather than close politely, so the client sees a dropped connection.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.connection.close()
                self.close_connection = True
                return
            payload = reply.body
            if isinstance(payload, (dict, list)):
                data = json.dumps(payload).encode()
            elif isinstance(payload, str):
                data = payload.encode()
            else:
                data = payload or b""
            try:
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout) before we answered

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            pass  # keep test output clean

    return Handler


# ---- faults -------------------------------------------------------------------------


def status_reply(
    status: int, *, message: str = "scripted failure", retry_after: float | None = None, error_type: str = "api_error"
) -> Reply:
    """An error status with a body in both APIs' `{"error": {"type", "message"}}` shape."""
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return Reply(status=status, body=body, headers=headers)


def slow_reply(delay_s: float, reply: Reply | None = None) -> Reply:
    """`reply` (by default an error) after `delay_s`: longer than the client's timeout, a timeout."""
    base = reply or status_reply(500, message="too late")
    return Reply(base.status, base.body, dict(base.headers), base.content_type, delay_s=delay_s)


def malformed_reply(raw: str = "{not json") -> Reply:
    """A 200 whose body claims to be JSON and is not (or, given a JSON text, has the wrong shape)."""
    return Reply(status=200, body=raw)


def dropped_reply() -> Reply:
    """Hang up without answering."""
    return Reply(drop=True)


# ---- correct replies ----------------------------------------------------------------


def anthropic_reply(
    text: str = "",
    *,
    tool_uses: Iterable[tuple[str, str, dict[str, Any]]] = (),
    model: str = "claude-fake",
    stop_reason: str | None = None,
    input_tokens: int = 11,
    output_tokens: int = 7,
) -> Reply:
    """A Messages API response (`anthropic.types.Message`): text then `(id, name, input)` tool uses."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": args} for i, n, args in tool_uses]
    body = {
        "id": "msg_fake_01",
        "type": "message",
        "role": "assistant",
        "content": content,
        "model": model,
        "stop_reason": stop_reason or ("tool_use" if content and content[-1]["type"] == "tool_use" else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    return Reply(body=body)


def openai_reply(
    text: str | None = "",
    *,
    tool_calls: Iterable[tuple[str, str, str]] = (),
    model: str = "gpt-fake",
    finish_reason: str | None = None,
    refusal: str | None = None,
    prompt_tokens: int = 13,
    completion_tokens: int = 5,
) -> Reply:
    """A Chat Completions response (`openai.types.chat.ChatCompletion`).

    Tool calls are `(id, name, arguments)` with the arguments as JSON text, valid or not.
    """
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in tool_calls]
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
    if calls:
        message["tool_calls"] = calls
    body = {
        "id": "chatcmpl-fake01",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply(body=body)
