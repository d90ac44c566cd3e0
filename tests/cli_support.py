"""Helpers for the ``herald`` CLI tests: run the command in-process against a live test server,
with its own configuration folder and no inherited ``HERALD_*`` settings."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import herald

HERALD_VARIABLES = ("HERALD_INSTANCE", "HERALD_PROFILE", "HERALD_WORKSPACE", "HERALD_TOKEN")


@pytest.fixture(autouse=True)
def forget_remembered_secrets() -> Iterator[None]:
    """Each test proves redaction by the patterns: no token remembered by an earlier test (the
    CLI runs in-process) may hide a leak."""
    from cli.redact import forget_secrets

    forget_secrets()
    yield
    forget_secrets()


class Cli:
    """``cli("instance", "health", "--json")`` → click ``Result`` (stdout and stderr apart)."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str | None] | None = None
    ) -> Result:
        """``env`` adds variables for this run; a value of None removes one."""
        environment = {"HERALD_CONFIG_DIR": str(self.config_dir), **(env or {})}
        return CliRunner().invoke(
            herald, list(args), input=input, env=environment, catch_exceptions=False
        )


def isolated_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh configuration folder; no ``HERALD_*`` setting leaks in from the environment."""
    for name in HERALD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "herald-config"
    monkeypatch.setenv("HERALD_CONFIG_DIR", str(folder))
    return folder


@contextlib.contextmanager
def permissive_umask() -> Iterator[None]:
    """Files must be private because the CLI makes them so, not because of the umask."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def closed_port_url() -> str:
    """The URL of a port on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def json_of(result: Result) -> Any:
    import json

    return json.loads(result.stdout)


class LeakyInstance:
    """A real HTTP server on 127.0.0.1 that answers like a misbehaving Herald instance: its
    problem details, headers and bodies echo secrets. ``routes`` maps ``"GET /api/v1/me"`` to
    ``(status, headers, body)``; anything else is a 404 problem that echoes the request line and
    the ``Authorization`` header it received."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], Any]]) -> None:
        import http.server
        import json
        import threading

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                outer.seen.append((self.command, self.path, dict(self.headers)))
                length = int(self.headers.get("Content-Length") or 0)
                outer.bodies.append((self.command, self.path, self.rfile.read(length)))
                key = f"{self.command} {self.path.split('?', 1)[0]}"
                status, headers, body = routes.get(
                    key,
                    (
                        404,
                        {"Content-Type": "application/problem+json"},
                        {
                            "title": "Not Found",
                            "status": 404,
                            "detail": f"No route for {self.path} "
                            f"(Authorization: {self.headers.get('Authorization')})",
                        },
                    ),
                )
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.bodies: list[tuple[str, str, bytes]] = []  # (method, path, request body)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits up to one poll interval: 10 ms, not the default 0.5 s
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self) -> LeakyInstance:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
