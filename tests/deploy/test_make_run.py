"""`make run` as a newcomer meets it: scripts/run.py started for real, read from its output.

The banner comes only once the server answers, the first administrator's password is printed
once, framed, after it, and signs in; the data folder is owner-only; a busy port is a clear error
before anything happens; Ctrl-C (SIGINT) and SIGTERM stop every process it started; two instances
on different ports and data folders do not touch each other (no shared gunicorn control socket).
"""

from __future__ import annotations

import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from tests.make_run_support import (
    BANNER,
    PASSWORD_LINE,
    ROOT,
    STARTUP_SECONDS,
    Run,
    attempt_sign_in,
    living_with_data_dir,
    password_box,
    run_env,
)
from tests.worker_harness import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., Run]]:
    runs: list[Run] = []

    def _start(data_dir: Path, port: int | None = None, **env: str) -> Run:
        run = Run(data_dir, port or free_port(), tmp_path / "home", **env)
        runs.append(run)
        return run

    (tmp_path / "home").mkdir()
    yield _start
    for run in runs:
        if run.process.poll() is None:
            run.kill()


def sign_in(base: str, password: str) -> None:
    assert attempt_sign_in(base, password) is not None, "the printed password signs in"


def assert_owner_only(data_dir: Path) -> None:
    deadline = time.monotonic() + 15  # beat writes its schedule a moment after starting
    while not list(data_dir.glob("celerybeat-schedule*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    names = {entry.name for entry in data_dir.iterdir()}
    assert {"herald.sqlite3", "secret_key"} <= names, names
    assert any(name.startswith("celerybeat-schedule") for name in names), names
    assert not any(name.startswith(".first-admin") for name in names), "password file left"
    for entry in data_dir.iterdir():
        try:
            info = entry.lstat()
        except FileNotFoundError:
            continue  # a journal SQLite removed as its last connection closed
        mode = stat.S_IMODE(info.st_mode)
        expected = 0o700 if stat.S_ISDIR(info.st_mode) else 0o600
        assert mode == expected, f"{entry.name}: {oct(mode)}"


def test_first_run_two_instances_banner_password_modes_and_clean_stop(
    tmp_path: Path, start: Callable[..., Run]
) -> None:
    first = start(tmp_path / "one" / "data")
    second = start(tmp_path / "two" / "data")
    base_1, banner_1 = first.started()
    base_2, banner_2 = second.started()

    for run in (first, second):
        assert run.health_at_banner == 200, "the banner is printed only once the server answers"
    password_1 = password_box(first, banner_1)
    password_2 = password_box(second, banner_2)
    assert password_1 != password_2
    # Each instance has its own database: each password signs in on its own server only.
    sign_in(base_1, password_1)
    sign_in(base_2, password_2)
    assert attempt_sign_in(base_2, password_1) is None

    for run in (first, second):
        assert_owner_only(run.data_dir)  # the WAL journals too, while a connection has them
    assert not (tmp_path / "home" / ".gunicorn").exists(), "no gunicorn control socket"

    assert first.stop(signal.SIGINT) == 0
    # The other instance did not notice.
    assert requests.get(f"{base_2}/api/v1/health", timeout=5).status_code == 200
    sign_in(base_2, password_2)
    assert second.stop(signal.SIGTERM) == 0

    for run, password in ((first, password_1), (second, password_2)):
        output = "\n".join(run.lines)
        assert output.count(password) == 1, "the password is printed once and logged nowhere"
        assert "Stopping" in output


def test_failed_start_stops_everything_and_the_next_start_shows_the_password(
    tmp_path: Path, start: Callable[..., Run]
) -> None:
    data_dir = tmp_path / "data"
    failed = start(data_dir, HERALD_WEB_WORKERS="none")  # gunicorn refuses it and exits
    assert failed.finish(timeout=STARTUP_SECONDS) == 1
    assert (
        "web exited with status 2 before the server answered; the new administrator's password "
        "will be shown once the server starts; stopped everything." in failed.lines
    ), failed.lines[-20:]
    assert not any(BANNER.match(line) or PASSWORD_LINE.match(line) for line in failed.lines)
    deadline = time.monotonic() + 5
    while living_with_data_dir(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert living_with_data_dir(data_dir) == [], "the worker and beat were stopped too"
    assert stat.S_IMODE((data_dir / "first-admin.json").stat().st_mode) == 0o600

    # A data folder from before (or another tool): world-readable database, key and password.
    data_dir.chmod(0o755)
    for entry in data_dir.iterdir():
        entry.chmod(0o755 if entry.is_dir() else 0o644)
    run = start(data_dir)
    _, banner = run.started()
    assert run.health_at_banner == 200
    sign_in(f"http://127.0.0.1:{run.port}", password_box(run, banner))
    assert not (data_dir / "first-admin.json").exists(), "shown once, then gone"
    assert_owner_only(data_dir)
    assert run.stop(signal.SIGTERM) == 0

    # The administrator exists: nothing new to show on any later start.
    created = tmp_path / "created.json"
    env = run_env(data_dir, free_port(), tmp_path)
    command = [sys.executable, "manage.py", "ensure_admin", "--password-file", str(created)]
    subprocess.run(command, cwd=ROOT, env=env, check=True)
    assert created.read_text() == ""
    assert stat.S_IMODE(created.stat().st_mode) == 0o600


def test_busy_port_is_a_clear_error_before_anything_happens(
    tmp_path: Path, start: Callable[..., Run]
) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        began = time.monotonic()
        run = start(tmp_path / "data", port)
        status = run.finish(timeout=20)
    assert time.monotonic() - began < 10
    assert status == 2
    assert run.lines == [
        f"Port {port} on 127.0.0.1 is already in use; set HERALD_PORT=<another port> "
        "or stop the other process"
    ]
    assert not (tmp_path / "data").exists(), "nothing ran: no data folder, no database"


def test_settings_create_the_data_folder_and_secret_key_owner_only(tmp_path: Path) -> None:
    """Outside `make run` too (any manage.py command, a usual umask): 0700 folder, 0600 key, and
    processes starting together on a fresh folder agree on one key."""
    data_dir = tmp_path / "data"
    env = run_env(data_dir, free_port(), tmp_path)
    script = (
        "import hashlib, django; from django.conf import settings; django.setup(); "
        "print(hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest())"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
            stdout=subprocess.PIPE,
            text=True,
            umask=0o022,  # a usual shell umask
        )
        for _ in range(3)
    ]
    digests = {process.communicate(timeout=60)[0].strip() for process in processes}
    assert all(process.returncode == 0 for process in processes)
    assert len(digests) == 1, "one key for every process"
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / "secret_key").stat().st_mode) == 0o600
    assert [entry.name for entry in data_dir.iterdir() if entry.name.startswith(".")] == []
