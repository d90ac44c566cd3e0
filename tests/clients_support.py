"""Clients generated from the served contract, as an integrator makes them (docs/clients.md), for
tests/api/test_generated_clients.py.

- ``generate_python_client(document, folder)``: openapi-python-client with the configuration of
  docs/clients/; returns the importable package and everything the generator printed.
- ``typescript_toolchain(folder)``: the npm packages pinned in docs/clients/package.json,
  installed once into ``folder``; a ``pytest.skip`` (with the reason) only where Node or npm is
  absent or the npm registry cannot be reached.
- ``typescript_check(toolchain, document, folder)``: openapi-typescript's types of the document
  and ``tsc --noEmit`` of docs/clients/flow.ts against them.
- ``live_instance(...)``: a ``make run`` (scripts/run.py) on this run's database kind, and an API
  token of its first administrator.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from django.conf import settings

from tests.make_run_support import ROOT, Run, attempt_sign_in, password_box
from tests.topology_support import PostgresServer
from tests.worker_harness import free_port

CLIENTS = ROOT / "docs" / "clients"
PYTHON_CONFIG = CLIENTS / "openapi-python-client.yaml"
PACKAGE_JSON = CLIENTS / "package.json"
GENERATOR_SECONDS = 240  # bounds, not the expected times (about 15 s each when idle)
NPM_SECONDS = 300
# What npm says when it cannot reach its registry (as opposed to a version that does not exist).
NETWORK_ERRORS = re.compile(r"ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ENETUNREACH|ECONNRESET")
CREATED_TOKEN = re.compile(r'id="created-token">\s*([^<\s]+)\s*<')


def generate_python_client(document: dict[str, Any], folder: Path) -> tuple[ModuleType, str]:
    """The client package openapi-python-client generates from ``document`` (imported as
    ``herald_generated_client``), and the generator's whole output."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "openapi.json"
    spec.write_text(json.dumps(document), encoding="utf-8")
    package = folder / "herald_generated_client"
    bin_dir = Path(sys.executable).parent
    completed = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(spec),
            "--output-path",
            str(package),
            "--meta",
            "none",
            "--config",
            str(PYTHON_CONFIG),
        ],
        capture_output=True,
        text=True,
        timeout=GENERATOR_SECONDS,
        cwd=folder,
        # Its post-generation hooks run ruff, as they would for an integrator who has it.
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    importlib.import_module("herald_generated_client.models")  # the package's .models
    return importlib.import_module("herald_generated_client"), output


def pinned_npm_packages() -> dict[str, str]:
    pinned: dict[str, str] = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))["devDependencies"]
    return pinned


def typescript_toolchain(cache: Path) -> Path:
    """``node_modules/.bin`` of the pinned packages, installed once into ``cache/<versions>``."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("Node.js or npm is not installed: the TypeScript client check needs both")
    pinned = pinned_npm_packages()
    folder = cache / "-".join(f"{name}@{version}" for name, version in sorted(pinned.items()))
    bin_dir = folder / "node_modules" / ".bin"
    if all((bin_dir / tool).exists() for tool in ("openapi-typescript", "tsc")):
        return bin_dir
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(PACKAGE_JSON, folder / "package.json")
    completed = subprocess.run(
        [npm, "install", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund"],
        capture_output=True,
        text=True,
        timeout=NPM_SECONDS,
        cwd=folder,
        check=False,
    )
    output = completed.stdout + completed.stderr
    if completed.returncode != 0 and NETWORK_ERRORS.search(output):
        pytest.skip(f"the npm registry cannot be reached: {output.strip()[-300:]}")
    assert completed.returncode == 0, output
    return bin_dir


def typescript_check(bin_dir: Path, document: dict[str, Any], folder: Path) -> str:
    """openapi-typescript (default options) writes ``herald.ts`` from ``document``; ``tsc`` then
    type-checks docs/clients/flow.ts against it. Returns both tools' output."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "openapi.json").write_text(json.dumps(document), encoding="utf-8")
    for name in ("flow.ts", "tsconfig.json"):
        shutil.copy(CLIENTS / name, folder / name)
    # openapi-fetch resolves from the toolchain's node_modules, as from a project's own.
    with contextlib.suppress(FileExistsError):
        (folder / "node_modules").symlink_to(bin_dir.parent, target_is_directory=True)
    outputs = []
    for command in (
        [str(bin_dir / "openapi-typescript"), "openapi.json", "-o", "herald.ts"],
        [str(bin_dir / "tsc"), "-p", "tsconfig.json"],
    ):
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=GENERATOR_SECONDS,
            cwd=folder,
            check=False,
        )
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, f"{' '.join(command[:1])}:\n{output}"
        outputs.append(output)
    return "\n".join(outputs)


def create_token(session: requests.Session, base: str) -> str:
    """A write token, from the developer settings form as a browser sends it."""
    session.get(f"{base}/settings/developer/", timeout=10)
    response = session.post(
        f"{base}/settings/developer/",
        data={
            "action": "create",
            "name": "generated client",
            "can_write": "on",
            "workspace": "",
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        headers={"Referer": f"{base}/settings/developer/"},
        timeout=10,
    )
    assert response.status_code == 200, response.status_code
    found = CREATED_TOKEN.search(response.text)
    assert found, "the new token is shown once"
    return found.group(1)


@contextlib.contextmanager
def live_instance(folder: Path) -> Iterator[tuple[str, str]]:
    """``(base URL, API token)`` of a ``make run`` on this run's database kind: SQLite in its
    data folder, or a database of its own on this run's PostgreSQL server."""
    env: dict[str, str] = {}
    database = None
    server = None
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        server = PostgresServer.from_django_settings(settings.DATABASES["default"])
        database = f"herald_clients_{uuid.uuid4().hex[:12]}"
        server.create_database(database)
        env["DATABASE_URL"] = server.url(database)
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    run = Run(folder / "data", free_port(), home, **env)
    try:
        base, banner = run.started()
        session = attempt_sign_in(base, password_box(run, banner))
        assert session is not None, "the printed password signs in"
        yield base, create_token(session, base)
    finally:
        if run.process.poll() is None:
            run.kill()
        if server is not None and database is not None:
            server.drop_database(database)
