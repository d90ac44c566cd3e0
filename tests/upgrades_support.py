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
from typing import Any

from django.conf import settings

from tests.topology_support import PostgresServer

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
PREVIOUS_RELEASE_RE = re.compile(r"^Previous release: `([0-9a-f]{7,40})`", re.MULTILINE)
# A throw-away Fernet key for the processes these tests start (never a real instance's).
CREDENTIALS_KEY = "dXBncmFkZS10ZXN0cy1vbmx5LWtleS0zMmJ5dGVzISE="


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


# --- A running instance of some release (web, worker, beat) -----------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Instance:
    """gunicorn, a Celery worker and beat of the tree at ``source``, as ``make run`` starts
    them (one web worker, two worker processes), on ``env``'s database and data folder."""

    def __init__(self, source: Path, env: dict[str, str], logs: Path) -> None:
        import time

        bin_dir = Path(sys.executable).parent
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        data_dir = Path(env["HERALD_DATA_DIR"])
        commands = {
            "web": [str(bin_dir / "gunicorn"), "config.wsgi:application", "--bind",
                    f"127.0.0.1:{self.port}", "--workers", "1", "--threads", "4"],
            "worker": [str(bin_dir / "celery"), "-A", "config", "worker", "--loglevel", "INFO",
                       "--concurrency", "2"],
            "beat": [str(bin_dir / "celery"), "-A", "config", "beat", "--loglevel", "INFO",
                     "--schedule", str(data_dir / "celerybeat-schedule")],
        }  # fmt: skip
        logs.mkdir(parents=True, exist_ok=True)
        self.logs = logs
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        for name, command in commands.items():
            self.processes[name] = subprocess.Popen(
                command,
                cwd=source,
                env={**env, "PYTHONPATH": str(source)},
                stdout=(logs / f"{name}.log").open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        import requests

        deadline = time.monotonic() + 60
        while True:
            self.check_alive()
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.url}/api/v1/health", timeout=2).status_code == 200:
                    return
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.2)

    def output(self) -> str:
        return "\n".join(
            f"--- {name}\n{(self.logs / f'{name}.log').read_text(errors='replace')[-4000:]}"
            for name in self.processes
        )

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            assert process.poll() is None, f"{name} exited\n{self.output()}"

    def stop(self) -> None:
        import signal

        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)


@contextlib.contextmanager
def running(source: Path, env: dict[str, str], logs: Path) -> Iterator[Instance]:
    instance = Instance(source, env, logs)
    try:
        yield instance
    finally:
        instance.stop()


def api_token(source: Path, env: dict[str, str], email: str) -> str:
    """A user ``email`` and an API token of theirs, made by the tree at ``source``'s commands."""
    manage(
        source,
        env,
        "shell",
        "-c",
        "from workspaces.models import User; "
        f"User.objects.create_user({email!r}, 'upgrade-tests-0123456789')",
    )
    done = manage(source, env, "create_api_token", "--user", email)
    return done.stdout.strip().splitlines()[-1]


class Api:
    """The API of a running instance, as a token's bearer."""

    def __init__(self, url: str, token: str) -> None:
        import requests

        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, status: int, **body: Any) -> Any:
        response = self.session.request(
            method, f"{self.url}/api/v1{path}", json=body or None, timeout=30
        )
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def publish(self, workspace: str, account: str, text: str, *, scheduled: bool) -> str:
        """A publication to ``account``, scheduled 3 s ahead or published now; its id."""
        from datetime import UTC, datetime, timedelta

        draft = self.call(
            "POST",
            "/publications",
            201,
            workspace_id=workspace,
            text=text,
            destinations=[{"account_id": account}],
        )
        if scheduled:
            at = datetime.now(UTC) + timedelta(seconds=3)
            self.call(
                "POST",
                f"/publications/{draft['id']}/schedule",
                200,
                scheduled_at=at.isoformat().replace("+00:00", "Z"),
                expected_revision=draft["revision"],
            )
        else:
            self.call(
                "POST",
                f"/publications/{draft['id']}/publish-now",
                202,
                expected_revision=draft["revision"],
            )
        return str(draft["id"])

    def wait_published(self, *publications: str, timeout: float = 60) -> None:
        import time

        deadline = time.monotonic() + timeout
        for publication in publications:
            while (status := self.call("GET", f"/publications/{publication}", 200)["status"]) != (
                "published"
            ):
                assert status in ("scheduled", "publishing", "queued"), (publication, status)
                assert time.monotonic() < deadline, (publication, status)
                time.sleep(0.3)


def core_flow(url: str, token: str, webhook_url: str, label: str) -> dict[str, str]:
    """Through the API: an organization and workspace, a Discord webhook account connected,
    one publication scheduled a few seconds ahead and one published now; both delivered.
    Returns the ids made."""
    api = Api(url, token)
    organization = api.call("POST", "/organizations", 201, name=f"Org {label}")
    workspace = api.call("POST", "/workspaces", 201, organization_id=organization["id"], name=label)
    connected = api.call(
        "POST",
        "/accounts/connect",
        201,
        workspace_id=workspace["id"],
        provider="discord_webhook",
        fields={"webhook_url": webhook_url},
    )
    made = {"workspace": str(workspace["id"]), "account": str(connected["account"]["id"])}
    made["scheduled"] = api.publish(
        made["workspace"], made["account"], f"{label}: scheduled", scheduled=True
    )
    made["now"] = api.publish(made["workspace"], made["account"], f"{label}: now", scheduled=False)
    api.wait_published(made["scheduled"], made["now"])
    return made
