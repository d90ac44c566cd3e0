"""Helpers of the upgrade tests (tests/upgrades/): a scratch PostgreSQL database, ``manage.py``
of this checkout or of another release run in a subprocess, and the previous release's source.

The previous release is the commit named in CHANGELOG.md ("Previous release"): its tree is
exported with ``git archive`` into a temporary folder and run from there with this checkout's
virtual environment (the same dependencies, none removed since).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from tests.topology_support import PostgresServer

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
PREVIOUS_RELEASE_RE = re.compile(r"^Previous release: `([0-9a-f]{7,40})`", re.MULTILINE)
# A throw-away Fernet key for the processes these tests start (never a real instance's).
CREDENTIALS_KEY = "dXBncmFkZS10ZXN0cy1vbmx5LWtleS0zMmJ5dGVzIQ="


def previous_release() -> str:
    """The commit CHANGELOG.md names as the previous release."""
    match = PREVIOUS_RELEASE_RE.search(CHANGELOG.read_text())
    assert match, "CHANGELOG.md names the previous release's commit"
    return match.group(1)


def git_available() -> bool:
    """A checkout with history (the tests that run an older release need its source)."""
    try:
        subprocess.run(
            ["git", "-C", str(ROOT), "cat-file", "-e", f"{previous_release()}^{{commit}}"],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def export_release(commit: str, target: Path) -> Path:
    """The source tree of ``commit`` (``git archive``) in ``target``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit],
        check=True,
        capture_output=True,
    ).stdout
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def process_env(data_dir: Path, database_url: str | None, **extra: str) -> dict[str, str]:
    """The environment of a Herald process: none of this session's Herald settings, a data
    folder of its own, the given database (the data folder's SQLite file when None)."""
    dropped = (
        "HERALD_",
        "DATABASE_URL",
        "REDIS_URL",
        "AWS_",
        "SECRET_KEY",
        "DJANGO_",
        "PYTHONPATH",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(
        {
            "HERALD_DATA_DIR": str(data_dir),
            "HERALD_ENVIRONMENT": "local",
            "HERALD_CREDENTIALS_KEY": CREDENTIALS_KEY,
            "HERALD_ALLOW_PRIVATE_PROVIDER_URLS": "true",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def manage(
    source: Path, env: dict[str, str], *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``manage.py`` of the tree at ``source``; fails the test with its output if it fails."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (args, done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    return done


def postgres_server() -> PostgresServer:
    return PostgresServer.from_django_settings(settings.DATABASES["default"])


@contextlib.contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the test server; its URL. Dropped afterwards."""
    server = postgres_server()
    name = f"herald_{prefix}_{uuid.uuid4().hex[:10]}"
    server.create_database(name)
    try:
        yield server.url(name)
    finally:
        server.drop_database(name)
