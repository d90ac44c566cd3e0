"""`make run` as a newcomer meets it: scripts/run.py started for real, read from its output.

The banner comes only once the server answers, the first administrator's password is printed
once, framed, after it, and signs in; the data folder is owner-only; a busy port is a clear error
before anything happens; Ctrl-C (SIGINT) and SIGTERM stop every process it started; two instances
on different ports and data folders do not touch each other (no shared gunicorn control socket).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from tests.worker_harness import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "scripts" / "run.py"
BANNER = re.compile(r"^Herald is running at (http://\S+)/ ")
PASSWORD_LINE = re.compile(r"^\|\s+password:\s+(\S+)\s+\|$")
STARTUP_SECONDS = 90  # a bound on waiting, not the expected time (about 10 s when idle)


def run_env(data_dir: Path, port: int, home: Path) -> dict[str, str]:
    dropped = ("HERALD_", "DATABASE_URL", "REDIS_URL", "AWS_", "SECRET_KEY", "ALLOWED_HOSTS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update(
        {
            "HERALD_DATA_DIR": str(data_dir),
            "HERALD_HOST": "127.0.0.1",
            "HERALD_PORT": str(port),
            "HERALD_ENVIRONMENT": "local",
            "HERALD_WEB_WORKERS": "1",
            "HERALD_WORKER_CONCURRENCY": "1",
            "HOME": str(home),  # where gunicorn would put its control socket
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, state) of every process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


def descendants(pid: int) -> set[int]:
    table = proc_table()
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, (ppid, _, _) in table.items() if ppid == parent and p not in found]
        found.update(children)
        frontier.extend(children)
    return found


def living_in_groups(groups: set[int]) -> list[int]:
    return [p for p, (_, pgid, state) in proc_table().items() if pgid in groups and state != "Z"]


def living_with_data_dir(data_dir: Path) -> list[int]:
    """Processes whose environment names this data folder (started for it, by anyone)."""
    marker = f"HERALD_DATA_DIR={data_dir}".encode()
    found = []
    for pid, (_, _, state) in proc_table().items():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(pid)
    return found


class Run:
    """One scripts/run.py; its output is read line by line as it comes."""

    def __init__(self, data_dir: Path, port: int, home: Path, **env: str) -> None:
        self.data_dir = data_dir
        self.port = port
        self.lines: list[str] = []
        self.health_at_banner: int | str | None = None
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, str(RUN)],
            cwd=ROOT,
            env={**run_env(data_dir, port, home), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            match = BANNER.match(line)
            if match:
                # The moment the banner is read, before reading on: does the server answer?
                try:
                    response = requests.get(f"{match.group(1)}/api/v1/health", timeout=5)
                    self.health_at_banner = response.status_code
                except requests.ConnectionError as exc:
                    self.health_at_banner = f"no answer: {exc}"
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(
        self, predicate: Callable[[str], bool], after: int = -1, timeout: float = STARTUP_SECONDS
    ) -> int:
        """Index of the first line after ``after`` that matches, waiting for it to come."""
        deadline = time.monotonic() + timeout
        seen = after + 1
        with self._changed:
            while True:
                for index in range(seen, len(self.lines)):
                    if predicate(self.lines[index]):
                        return index
                seen = len(self.lines)
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    output = "\n".join(self.lines[-60:])
                    raise AssertionError(f"not seen in time; exit {self.process.poll()}:\n{output}")
                self._changed.wait(0.5)

    def started(self) -> tuple[str, int]:
        """Wait for the banner and the blank line closing it (and the password box, if any)."""
        banner = self.wait_for(lambda line: bool(BANNER.match(line)))
        self.wait_for(lambda line: line.startswith("Sign in at /login/"))
        base = BANNER.match(self.lines[banner]).group(1)  # type: ignore[union-attr]
        return base, banner

    def stop(self, signum: int) -> int:
        table = proc_table()
        groups = {table[pid][1] for pid in descendants(self.process.pid) if pid in table}
        assert len(groups) >= 3, "gunicorn, the worker and beat each lead a process group"
        self.process.send_signal(signum)
        status = self.finish(timeout=40)
        deadline = time.monotonic() + 5  # let init reap what was reparented to it
        while living_in_groups(groups) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert living_in_groups(groups) == [], "processes left behind after run.py exited"
        return status

    def finish(self, timeout: float) -> int:
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return status

    def kill(self) -> None:
        for pid in descendants(self.process.pid) | {self.process.pid}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        self.process.wait(timeout=10)


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


def password_box(run: Run, banner: int) -> str:
    """The framed password: exactly one, after the banner; the password itself printed once."""
    index = run.wait_for(lambda line: bool(PASSWORD_LINE.match(line)))
    run.wait_for(lambda line: line.startswith("+---"), after=index)
    assert index > banner, "the password comes after the server answered"
    box = run.lines[index - 4 : index + 5]
    assert box[0].startswith("+---"), box
    assert box[-1].startswith("+---"), box
    assert any("e-mail:   admin@localhost" in line for line in box), box
    assert any(f"sign in:  http://127.0.0.1:{run.port}/login/" in line for line in box), box
    return PASSWORD_LINE.match(run.lines[index]).group(1)  # type: ignore[union-attr]


def attempt_sign_in(base: str, password: str) -> requests.Session | None:
    """The sign-in form as a browser sends it; the signed-in session, or None if refused."""
    session = requests.Session()
    assert session.get(f"{base}/login/", timeout=10).status_code == 200
    response = session.post(
        f"{base}/login/",
        data={
            "username": "admin@localhost",
            "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"],
        },
        allow_redirects=False,
        timeout=10,
    )
    if response.status_code != 302:
        assert response.status_code == 200, response.status_code  # the form again, with errors
        return None
    page = session.get(f"{base}/settings/developer/", allow_redirects=False, timeout=10)
    assert page.status_code == 200, "signed in: the developer settings page opens"
    return session


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
