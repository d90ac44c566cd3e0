"""Shared machinery of the stand-in providers: a real HTTP server on 127.0.0.1 with faults.

Every stand-in (``tests.providers.mastodon.standin`` ...) is a :class:`StandIn` subclass that declares
its routes and its error shapes. Use it in-process::

    with MastodonStandIn() as server:          # port 0: the OS picks a free port
        server.set_faults(rate_limit={"count": 1, "retry_after": 3})
        ...
        assert server.posts_accepted == 1

or as a process: ``python -m tests.providers.mastodon.standin --port 8401`` prints one JSON line
``{"provider", "url", "port", "fixtures"}`` and serves until SIGTERM/SIGINT.

Control API over HTTP (same port, no authentication; bound to 127.0.0.1):

* ``GET /__control/stats`` -> ``{"provider", "posts_accepted", "requests", "counters", "faults"}``
* ``GET /__control/posts`` -> ``{"posts": [...]}`` (every accepted post, oldest first)
* ``GET /__control/requests`` -> ``{"requests": [{"method", "path", "at"}, ...]}`` (arrival
  time of every provider request, ``time.time()`` seconds, oldest first)
* ``POST /__control/faults`` with a fault spec -> ``{"faults": {...}}`` (keys given replace the
  current setting; others stay). ``DELETE /__control/faults`` clears all faults.
* ``POST /__control/reset`` -> clears faults, counters and stored posts (credentials stay valid).

Fault spec (every key optional)::

    {"rate_limit": {"count": 2, "retry_after": 3, "standard_header": true},
     "server_error": {"count": 1, "status": 503},
     "permanent": {"count": 1, "status": 422, "message": "..."},
     "accept_then_timeout": {"count": 1, "seconds": 2.0},
     "delay_ms": 20,
     "reject_tokens": true,
     "clear": true}

``rate_limit``/``server_error``/``permanent``/``accept_then_timeout`` apply to the next
``count`` *posts* (requests that would create a post), in that order of precedence;
``accept_then_timeout`` stores the post, then sleeps ``seconds`` before answering (set it past
the client's read timeout). ``delay_ms`` delays every provider request; ``reject_tokens``
answers 401 to every authenticated request (a revoked grant) until set to false.
``standard_header: false`` omits ``Retry-After`` so only the provider's own rate-limit headers
or body say when to retry.
"""

from __future__ import annotations

import argparse
import email
import email.message
import json
import re
import signal
import socket
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


@dataclass
class Part:
    name: str
    filename: str | None
    content_type: str
    data: bytes


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: email.message.Message
    body: bytes

    @property
    def content_type(self) -> str:
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    @property
    def bearer(self) -> str:
        value = self.headers.get("Authorization") or ""
        return value[7:].strip() if value.lower().startswith("bearer ") else ""

    @cached_property
    def json(self) -> Any:
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @cached_property
    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)

    @cached_property
    def parts(self) -> list[Part]:
        if self.content_type != "multipart/form-data":
            return []
        holder = email.message.Message()
        holder["Content-Type"] = self.headers.get("Content-Type") or ""
        boundary = holder.get_param("boundary")
        if not isinstance(boundary, str):
            return []
        parts = []
        for section in self.body.split(b"--" + boundary.encode())[1:]:
            if section.startswith(b"--"):
                break
            section = section.removeprefix(b"\r\n")
            head, _, data = section.partition(b"\r\n\r\n")
            data = data.removesuffix(b"\r\n")
            headers = email.message_from_bytes(head + b"\r\n\r\n")
            name = headers.get_param("name", header="content-disposition")
            parts.append(
                Part(
                    name=str(name or ""),
                    filename=headers.get_filename(),
                    content_type=headers.get_content_type(),
                    data=data,
                )
            )
        return parts

    def files(self) -> list[Part]:
        return [p for p in self.parts if p.filename is not None]

    def fields(self) -> dict[str, Any]:
        """Request parameters from the query, a form, a JSON object or multipart text parts.

        Repeated keys (and ``key[]``) become lists.
        """
        merged: dict[str, Any] = {}

        def put(key: str, value: Any) -> None:
            if key.endswith("[]"):
                merged.setdefault(key[:-2], []).append(value)
            elif key in merged and not isinstance(merged[key], list):
                merged[key] = [merged[key], value]
            else:
                merged[key] = value

        for key, values in self.query.items():
            for value in values:
                put(key, value)
        if self.content_type == "application/json" and isinstance(self.json, dict):
            merged.update(self.json)
        elif self.content_type == "application/x-www-form-urlencoded":
            for key, values in self.form.items():
                for value in values:
                    put(key, value)
        for part in self.parts:
            if part.filename is None:
                put(part.name, part.data.decode("utf-8", "replace"))
        return merged


@dataclass
class Reply:
    status: int
    body: Any = None  # dict/list -> JSON; bytes/str -> as is; None -> empty
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Route:
    method: str
    pattern: str
    handler: Callable[..., Reply]
    auth: bool = True  # subject to ``reject_tokens``

    def __post_init__(self) -> None:
        self.regex = re.compile(self.pattern)


class Faults:
    """Thread-safe fault plan; counts are consumed one post at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        self.rate_limit = {"count": 0, "retry_after": 1, "standard_header": True}
        self.server_error = {"count": 0, "status": 503}
        self.permanent: dict[str, Any] = {
            "count": 0,
            "status": None,
            "message": "Rejected by stand-in fault",
        }
        self.accept_then_timeout = {"count": 0, "seconds": 2.0}
        self.delay_ms = 0
        self.reject_tokens = False

    def configure(self, spec: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if spec.get("clear"):
                self.clear()
            for name in ("rate_limit", "server_error", "permanent", "accept_then_timeout"):
                if isinstance(spec.get(name), dict):
                    getattr(self, name).update(spec[name])
            if "delay_ms" in spec:
                self.delay_ms = int(spec["delay_ms"] or 0)
            if "reject_tokens" in spec:
                self.reject_tokens = bool(spec["reject_tokens"])
            return self._snapshot()

    def take_post_fault(self) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            for name in ("rate_limit", "server_error", "permanent"):
                plan = getattr(self, name)
                if int(plan["count"]) > 0:
                    plan["count"] = int(plan["count"]) - 1
                    return name, dict(plan)
            return None

    def take_timeout(self) -> float:
        with self._lock:
            if int(self.accept_then_timeout["count"]) > 0:
                self.accept_then_timeout["count"] = int(self.accept_then_timeout["count"]) - 1
                return float(self.accept_then_timeout["seconds"])
            return 0.0

    def _snapshot(self) -> dict[str, Any]:
        return {
            "rate_limit": dict(self.rate_limit),
            "server_error": dict(self.server_error),
            "permanent": dict(self.permanent),
            "accept_then_timeout": dict(self.accept_then_timeout),
            "delay_ms": self.delay_ms,
            "reject_tokens": self.reject_tokens,
        }

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return self._snapshot()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    standin: StandIn


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Small keep-alive responses must not wait for delayed ACKs (Nagle).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers=self.headers,
            body=self._read_body(),
        )
        try:
            reply = self.server.standin.dispatch(request)
        except Exception:
            self.server.standin.bump("crashes")
            traceback.print_exc()
            reply = Reply(500, {"error": "stand-in crashed"})
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        body = reply.body
        if body is None:
            data = b""
        elif isinstance(body, bytes):
            data = body
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = json.dumps(body).encode("utf-8")
        try:
            self.send_response(reply.status)
            headers = {k.lower(): v for k, v in reply.headers.items()}
            if data and "content-type" not in headers:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            # One write for status line, headers and body (BaseHTTPRequestHandler buffers the
            # headers in ``_headers_buffer`` until ``end_headers``).
            buffered: list[bytes] = getattr(self, "_headers_buffer", [])
            head = b"".join(buffered) + b"\r\n"
            self._headers_buffer: list[bytes] = []
            self.wfile.write(head + (data if self.command != "HEAD" else b""))
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client gave up (e.g. accept-then-timeout)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class StandIn:
    """Base of every stand-in provider. Subclasses implement :meth:`build_routes` and the
    error shapes (:meth:`error_reply`, :meth:`rate_limited_reply`, :meth:`unauthorized_reply`)."""

    provider = "standin"
    permanent_status = 400

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.requested_port = port
        self.lock = threading.RLock()
        self.faults = Faults()
        self.counters: Counter[str] = Counter()
        self.posts: list[dict[str, Any]] = []
        self.requests = 0
        # Arrival time of every provider request (``time.time()``), for timing assertions such
        # as "retried no earlier than Retry-After". Bounded; cleared on reset.
        self.request_log: deque[dict[str, Any]] = deque(maxlen=20_000)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.routes = self.build_routes()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        server = _Server((self.host, self.requested_port), _Handler)
        server.standin = self
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.01},  # stop() waits up to one interval
            daemon=True,
            name=f"standin-{self.provider}",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in accept-then-timeout
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("stand-in not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- subclass hooks -----------------------------------------------------------------------

    def build_routes(self) -> list[Route]:
        raise NotImplementedError

    def fixtures(self) -> dict[str, Any]:
        """Ready-made credentials of this stand-in (printed by the standalone process)."""
        return {}

    def error_reply(self, status: int, message: str) -> Reply:
        return Reply(status, {"error": message})

    def rate_limited_reply(self, retry_after: float) -> Reply:
        return self.error_reply(429, "Too many requests")

    def unauthorized_reply(self) -> Reply:
        return self.error_reply(401, "The access token is invalid")

    def configure_extra(self, spec: dict[str, Any]) -> None:
        """Provider-specific fault keys (e.g. Bluesky ``expire_tokens``)."""

    def clear_data(self) -> None:
        """Forget stored content on reset (subclasses clear their own stores)."""

    # --- helpers for handlers -----------------------------------------------------------------

    def bump(self, name: str, by: int = 1) -> None:
        with self.lock:
            self.counters[name] += by

    def gate_post(self) -> Reply | None:
        """Consume the next post fault, if any, and answer it instead of the post."""
        taken = self.faults.take_post_fault()
        if taken is None:
            return None
        name, plan = taken
        self.bump(f"fault_{name}")
        if name == "rate_limit":
            retry_after = float(plan["retry_after"])
            reply = self.rate_limited_reply(retry_after)
            if plan.get("standard_header", True):
                reply.headers["Retry-After"] = str(
                    int(retry_after) if retry_after == int(retry_after) else retry_after
                )
            else:
                reply.headers.pop("Retry-After", None)
            return reply
        if name == "server_error":
            return self.error_reply(int(plan["status"]), "Internal server error (stand-in fault)")
        return self.error_reply(int(plan["status"] or self.permanent_status), str(plan["message"]))

    def accept_post(self, summary: dict[str, Any]) -> None:
        with self.lock:
            self.posts.append(summary)
            self.counters["posts_accepted"] += 1

    def stall_if_asked(self) -> None:
        seconds = self.faults.take_timeout()
        if seconds > 0:
            self.bump("fault_accept_then_timeout")
            self._stopping.wait(seconds)

    @property
    def posts_accepted(self) -> int:
        with self.lock:
            return self.counters["posts_accepted"]

    def set_faults(self, **spec: Any) -> dict[str, Any]:
        self.configure_extra(spec)
        return self.faults.configure(spec)

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "provider": self.provider,
                "posts_accepted": self.counters["posts_accepted"],
                "requests": self.requests,
                "counters": dict(self.counters),
                "faults": self.faults.snapshot(),
            }

    def reset(self) -> None:
        self.faults.clear()
        with self.lock:
            self.counters.clear()
            self.posts.clear()
            self.requests = 0
            self.request_log.clear()
            self.clear_data()

    # --- dispatch -----------------------------------------------------------------------------

    def dispatch(self, request: Request) -> Reply:
        if request.path.startswith("/__control/"):
            return self._control(request)
        with self.lock:
            self.requests += 1
            self.request_log.append(
                {"method": request.method, "path": request.path, "at": time.time()}
            )
        delay = self.faults.delay_ms
        if delay:
            time.sleep(delay / 1000)
        for route in self.routes:
            if route.method != request.method:
                continue
            match = route.regex.fullmatch(request.path)
            if match is None:
                continue
            if route.auth and self.faults.reject_tokens:
                self.bump("fault_unauthorized")
                return self.unauthorized_reply()
            return route.handler(request, **match.groupdict())
        return self.error_reply(404, "Not found")

    def _control(self, request: Request) -> Reply:
        path = request.path.rstrip("/")
        if path == "/__control/stats" and request.method == "GET":
            return Reply(200, self.stats())
        if path == "/__control/requests" and request.method == "GET":
            with self.lock:
                return Reply(200, {"requests": list(self.request_log)})
        if path == "/__control/posts" and request.method == "GET":
            with self.lock:
                return Reply(200, {"posts": list(self.posts)})
        if path == "/__control/faults" and request.method == "POST":
            spec = request.json if isinstance(request.json, dict) else None
            if spec is None:
                return Reply(400, {"error": "body must be a JSON object"})
            return Reply(200, {"faults": self.set_faults(**spec)})
        if path == "/__control/faults" and request.method == "DELETE":
            return Reply(200, {"faults": self.set_faults(clear=True)})
        if path == "/__control/reset" and request.method == "POST":
            self.reset()
            return Reply(200, self.stats())
        return Reply(404, {"error": "unknown control path"})


def serve_main(factory: Callable[[str, int], StandIn], argv: list[str] | None = None) -> None:
    """Run one stand-in as a process until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(description=f"Herald stand-in provider ({factory.__name__})")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = factory(args.host, args.port).start()
    done = threading.Event()

    def stop(*_: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        json.dumps(
            {
                "provider": server.provider,
                "url": server.url,
                "port": server.port,
                "fixtures": server.fixtures(),
            }
        ),
        flush=True,
    )
    done.wait()
    server.stop()
