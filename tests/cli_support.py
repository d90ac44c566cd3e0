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


class Cli:
    """``cli("instance", "health", "--json")`` → click ``Result`` (stdout and stderr apart)."""

    def __init__(self, config_dir: Path) -> None:
        self.config_dir = config_dir

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> Result:
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
