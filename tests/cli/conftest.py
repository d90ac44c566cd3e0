"""Fixtures of the CLI tests: the CLI run in-process with its own configuration folder, and the
live server it talks to with a token of the default user."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_support import Cli, isolated_config_dir
from workspaces.models import User


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_config_dir(tmp_path, monkeypatch)


@pytest.fixture
def cli(config_dir: Path) -> Cli:
    return Cli(config_dir)


@pytest.fixture
def url(live_server: Any) -> str:
    return str(live_server.url)


@pytest.fixture
def token(make_token: Callable[..., str], user: User, workspace: Any) -> str:
    return make_token(user)
