"""A ``make run`` (scripts/run.py) started for real and read line by line as it prints, for the
tests that drive it (tests/deploy/test_make_run.py, tests/deploy/test_readme_quickstart.py): its
environment, its process tree, the framed first password and the sign-in form."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
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
