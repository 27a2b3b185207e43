"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

litellm talks to it over real HTTP (model ``openai/<name>`` with ``api_base`` pointing here), so
tests exercise the same code path as a hosted provider. Answers are scripted: a queue of
``Reply`` values, then a default responder. Every request is logged. It is a test fixture, never
a judge: nothing in judge uses it by default.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a chat completion with ``content``, or an HTTP error."""

    content: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    #: OpenAI-format logprobs.content for the answer, or None.
    logprobs: list[dict[str, Any]] | None = None
    #: Raw body to send instead of a completion (e.g. malformed JSON).
    raw_body: bytes | None = None
    #: Close the connection without answering (a reset seen by the client).
    drop: bool = False
    #: With ``drop``: abort with a TCP RST ("connection reset by peer") instead of a clean close.
    reset: bool = False
    #: The completion's finish_reason ("length" is what a provider says when it cut the answer).
    finish_reason: str = "stop"
    prompt_tokens: int = 100
    completion_tokens: int = 20


Responder = Callable[[dict[str, Any]], Reply]


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion JSON body for ``reply``."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": reply.content},
        "finish_reason": reply.finish_reason,
    }
    if reply.logprobs is not None:
        choice["logprobs"] = {"content": reply.logprobs}
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


def logprobs_for(
    content: str, dist: dict[str, float], key: str = "verdict"
) -> list[dict[str, Any]]:
    """OpenAI-format token logprobs for ``content`` with ``dist`` (label -> probability) as the
    candidates at the position where the value of ``key`` begins. Tokens are split so that the
    value starts a token, as real tokenizers do after ``": "``."""

    marker = f'"{key}": "'
    at = content.find(marker)
    if at < 0:
        return [{"token": content, "logprob": 0.0, "top_logprobs": []}]
    head, tail = content[: at + len(marker)], content[at + len(marker) :]
    value_end = tail.find('"')
    value, rest = tail[:value_end], tail[value_end:]
    tops = [
        {"token": label, "logprob": math.log(p) if p > 0 else -1e9}
        for label, p in sorted(dist.items(), key=lambda kv: -kv[1])
    ]
    chosen = dist.get(value, 1.0)
    return [
        {"token": head, "logprob": 0.0, "top_logprobs": []},
        {"token": value, "logprob": math.log(chosen) if chosen > 0 else -1e9, "top_logprobs": tops},
        {"token": rest, "logprob": 0.0, "top_logprobs": []},
    ]


class _QuietServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client went away first
    (a client that timed out on a slow reply closes its end; that is the point of the test)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:

        if isinstance(sys.exc_info()[1], ConnectionError | OSError):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    """Start with ``with LoopbackServer() as server:``; ``server.api_base`` is the URL."""

    def __init__(self, responder: Responder | None = None, host: str = "127.0.0.1") -> None:
        self.queue: deque[Reply] = deque()
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        #: The Authorization header of each request, in order (None when absent), kept apart
        #: from ``requests`` so that checks on what reached the model do not see the key.
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer((host, 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        """The base URL to give litellm (``.../v1``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order."""
        with self._lock:
            self.queue.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        """The reply for ``request``: the queue first, then the responder."""
        with self._lock:
            self.requests.append(request)
            if self.queue:
                return self.queue.popleft()
        if self.responder is None:
            return Reply(status=500, content="no scripted reply left")
        return self.responder(request)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return  # quiet

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                try:
                    request = json.loads(body or b"{}")
                except json.JSONDecodeError:
                    request = {"_invalid": body.decode("utf-8", "replace")}
                request["_path"] = self.path
                with server._lock:
                    server.authorizations.append(self.headers.get("authorization"))
                reply = server.next_reply(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    if reply.reset:
                        # SO_LINGER on with a zero timeout: close() sends RST, not FIN.
                        self.connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    self.connection.close()
                    return
                if reply.raw_body is not None:
                    payload = reply.raw_body
                elif reply.status == 200:
                    model = str(request.get("model", "loopback"))
                    payload = json.dumps(completion_body(reply, model)).encode()
                else:
                    payload = json.dumps(
                        {
                            "error": {
                                "message": reply.content or "error",
                                "type": "server_error",
                                "code": reply.status,
                            }
                        }
                    ).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

        return Handler
