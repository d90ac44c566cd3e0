"""`make run`: migrate, create a first administrator, then run gunicorn, a Celery worker and beat
on the embedded default (SQLite, local media folder, filesystem broker). Ctrl-C stops all three.

Order of events, each step only after the previous one succeeded:

1. Listen on ``HERALD_HOST:HERALD_PORT`` (this process binds the socket and hands it to gunicorn
   as ``fd://N``): a busy port is a one-line error, exit status 2, before anything else happens.
2. Files and processes are owner-only: umask 077 for this process and everything it starts,
   ``HERALD_DATA_DIR`` mode 0700, its existing files tightened to 0600.
3. ``migrate`` and ``ensure_admin --password-file``: a password it just created goes to
   ``first-admin.json`` (0600) in the data folder, never to a log or the processes' output.
4. gunicorn, the worker and beat start; the banner is printed only once ``/api/v1/health``
   answers on the bound address, then the administrator's password, framed, and the file is
   deleted. If a process exits first, or the server does not answer in time, everything stops,
   the exit status is 1 and the password waits for the next start.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
STARTUP_SECONDS = 120  # migrations on a slow disk plus gunicorn importing the application
STOP_SECONDS = 15


class Stop(Exception):
    """SIGTERM or SIGHUP: stop everything as Ctrl-C does."""


def _raise_stop(*_: object) -> None:
    raise Stop


def fail(message: str, status: int) -> int:
    print(message, file=sys.stderr, flush=True)
    return status


def listen(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        # As gunicorn does: a port left in TIME_WAIT by a previous run is not "in use", a
        # listening socket is.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def base_url(sock: socket.socket) -> str:
    """The address to reach the bound socket at (loopback for a wildcard bind)."""
    host, port = sock.getsockname()[:2]
    if sock.family == socket.AF_INET6:
        host = "::1" if host == "::" else host
        return f"http://[{host}]:{port}"
    host = "127.0.0.1" if host == "0.0.0.0" else host  # noqa: S104 - reading, not binding
    return f"http://{host}:{port}"


def tighten(data_dir: Path) -> None:
    """Owner-only data folder; its files (database, journals, keys, schedules) 0600."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if data_dir.stat().st_mode & stat.S_ISVTX:
        return  # a shared folder such as /tmp: not ours to close
    data_dir.chmod(0o700)
    for entry in os.scandir(data_dir):
        info = entry.stat(follow_symlinks=False)
        if info.st_uid != os.getuid() or not (info.st_mode & 0o077):
            continue
        if stat.S_ISREG(info.st_mode):
            os.chmod(entry.path, 0o600)
        elif stat.S_ISDIR(info.st_mode):
            os.chmod(entry.path, 0o700)


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True)


def ensure_admin(pending: Path) -> None:
    """Run ``ensure_admin``; a password it just created waits in ``pending`` until shown.

    It is kept (0600, in the 0700 data folder, as the secret key is) rather than held in memory
    so that a start that fails before the server answers does not lose it: the next start shows
    it.
    """
    fd, path = tempfile.mkstemp(prefix=".first-admin-", dir=pending.parent)  # mode 0600
    os.close(fd)
    try:
        manage("ensure_admin", "--password-file", path)
        if os.path.getsize(path):
            os.replace(path, pending)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def read_pending(pending: Path) -> dict[str, str] | None:
    """The e-mail and password not shown yet (deleted once they are)."""
    try:
        return json.loads(pending.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - http://loopback
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def stop(processes: dict[str, subprocess.Popen[bytes]]) -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
    for process in processes.values():
        if process.poll() is None:
            process.terminate()  # gunicorn and celery shut their own children down
    deadline = time.monotonic() + STOP_SECONDS
    for process in processes.values():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for process in processes.values():
        # Each process leads its own group: anything of it still there (a pool child whose
        # parent was killed) goes too. No group left is the normal case.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


def worker_processes() -> int:
    raw = os.environ.get("HERALD_WORKER_PROCESSES", "2")
    try:
        return max(1, int(raw))
    except ValueError:
        return 2


def framed(lines: list[str]) -> str:
    width = max(len(line) for line in lines)
    rule = "+" + "-" * (width + 2) + "+"
    return "\n".join([rule, *(f"| {line.ljust(width)} |" for line in lines), rule])


class StartFailed(Exception):
    """``make run`` cannot start; the message says why and what to change."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def bind() -> socket.socket:
    """The listening socket on HERALD_HOST:HERALD_PORT, taken before anything else is done."""
    host = os.environ.get("HERALD_HOST", "127.0.0.1")
    raw_port = os.environ.get("HERALD_PORT", "8000")
    try:
        port = int(raw_port)
    except ValueError:
        raise StartFailed(f"HERALD_PORT must be a port number, not {raw_port!r}", 2) from None
    try:
        return listen(host, port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartFailed(
                f"Port {port} on {host} is already in use; set HERALD_PORT=<another port> "
                "or stop the other process",
                2,
            ) from None
        raise StartFailed(
            f"Cannot listen on {host} port {port}: {exc}; check HERALD_HOST/HERALD_PORT", 2
        ) from None


def commands(fd: int, data_dir: Path) -> dict[str, list[str]]:
    """The web server on the listening socket ``fd``, the workers and beat."""
    return {
        "web": [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--bind",
            f"fd://{fd}",
            "--workers",
            os.environ.get("HERALD_WEB_WORKERS", "2"),
            "--threads",
            "4",
            "--graceful-timeout",
            "10",
            "--access-logfile",
            "-",
            # As the image (docker/gunicorn.conf.py): idle connections outlive the CLI's
            # 2-second polling, so a poll seldom meets a connection being closed.
            "--keep-alive",
            "5",
            # One control socket per user home (~/.gunicorn/gunicorn.ctl) would be shared by
            # every instance; the image disables it too (docker/gunicorn.conf.py).
            "--no-control-socket",
        ],
        # HERALD_WORKER_PROCESSES worker processes (2), each on Celery's threads pool with
        # HERALD_WORKER_CONCURRENCY sends at once (config/settings.py): one process's Python
        # runs on one core at a time.
        **{
            f"worker{n}" if n > 1 else "worker": [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "--loglevel",
                "INFO",
                "-n",
                f"worker{n}@%h",
            ]
            for n in range(1, worker_processes() + 1)
        },
        "beat": [
            str(BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(data_dir / "celerybeat-schedule"),
        ],
    }


def start_problem(url: str, processes: dict[str, subprocess.Popen[bytes]]) -> str | None:
    """Wait until the server answers ``/api/v1/health``: None, or why it never will."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while not answers(f"{url}/api/v1/health"):
        problem = next(
            (
                f"{name} exited with status {process.returncode} before the server answered"
                for name, process in processes.items()
                if process.poll() is not None
            ),
            None,
        )
        if problem is None and time.monotonic() > deadline:
            problem = f"The server did not answer {url}/api/v1/health in {STARTUP_SECONDS} s"
        if problem:
            return problem
        time.sleep(0.25)
    return None


def announce(url: str, pending: Path) -> None:
    """Where Herald runs and, on the first start, the administrator's password: shown once."""
    print(f"\nHerald is running at {url}/  (API docs: {url}/docs/)")
    print(
        "Sign in at /login/ and create API tokens at /settings/developer/. Ctrl-C stops.\n",
        flush=True,
    )
    admin = read_pending(pending)
    if admin:
        print(
            framed(
                [
                    "First administrator created. The password is shown only this once:",
                    "",
                    f"  e-mail:   {admin['email']}",
                    f"  password: {admin['password']}",
                    f"  sign in:  {url}/login/",
                    "",
                    "Change it after signing in.",
                ]
            )
            + "\n",
            flush=True,
        )
        pending.unlink()  # shown: once only


def supervise(processes: dict[str, subprocess.Popen[bytes]]) -> int:
    """Until one process exits: then stop the others (1)."""
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                print(
                    f"{name} exited with status {process.returncode}; stopping the others.",
                    file=sys.stderr,
                    flush=True,
                )
                stop(processes)
                return 1
        time.sleep(1)


def serve(sock: socket.socket, processes: dict[str, subprocess.Popen[bytes]]) -> int:
    """Migrate, make sure there is an administrator, start everything on ``sock``, supervise."""
    # Relative to the checkout, as for the processes started there (cwd=ROOT).
    data_dir = (ROOT / (os.environ.get("HERALD_DATA_DIR") or ".data")).resolve()
    pending = data_dir / "first-admin.json"
    tighten(data_dir)
    manage("migrate", "--noinput", "-v", "0")
    ensure_admin(pending)
    url = base_url(sock)
    fd = sock.fileno()
    for name, command in commands(fd, data_dir).items():
        processes[name] = subprocess.Popen(
            command,
            cwd=ROOT,
            start_new_session=True,
            pass_fds=(fd,) if name == "web" else (),
        )
    sock.close()  # gunicorn holds it now
    problem = start_problem(url, processes)
    if problem:
        stop(processes)
        if pending.exists():
            problem += "; the new administrator's password will be shown once the server starts"
        return fail(f"\n{problem}; stopped everything.", 1)
    announce(url, pending)
    return supervise(processes)


def main() -> int:
    os.umask(0o077)
    try:
        sock = bind()
    except StartFailed as exc:
        return fail(str(exc), exc.status)
    signal.signal(signal.SIGTERM, _raise_stop)
    signal.signal(signal.SIGHUP, _raise_stop)
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        return serve(sock, processes)
    except (KeyboardInterrupt, Stop):
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            print("\nStopping…", flush=True)
        stop(processes)
        return 0
    except subprocess.CalledProcessError as exc:
        stop(processes)
        return fail(f"{' '.join(exc.cmd[1:3])} failed with status {exc.returncode}", 1)
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
