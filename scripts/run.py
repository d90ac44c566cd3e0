"""`make run`: migrate, create a first administrator, then run gunicorn, a Celery worker and beat
on the embedded default (SQLite, local media folder, filesystem broker). Ctrl-C stops all three."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True)


def main() -> int:
    host = os.environ.get("HERALD_HOST", "127.0.0.1")
    port = os.environ.get("HERALD_PORT", "8000")
    data_dir = Path(os.environ.get("HERALD_DATA_DIR", ROOT / ".data"))
    data_dir.mkdir(parents=True, exist_ok=True)
    manage("migrate", "--noinput", "-v", "0")
    manage("ensure_admin")
    commands = {
        "web": [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"{host}:{port}",
                "--workers", os.environ.get("HERALD_WEB_WORKERS", "2"), "--threads", "4",
                "--access-logfile", "-"],
        "worker": [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO",
                   "--concurrency", os.environ.get("HERALD_WORKER_CONCURRENCY", "2")],
        "beat": [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO",
                 "--schedule", str(data_dir / "celerybeat-schedule")],
    }
    processes: dict[str, subprocess.Popen[bytes]] = {}
    for name, command in commands.items():
        processes[name] = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
    print(f"\nHerald is running at http://{host}:{port}/  (API docs: http://{host}:{port}/docs/)")
    print("Sign in at /login/ and create API tokens at /settings/developer/. Ctrl-C stops.\n",
          flush=True)

    def stop(*_: object) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()  # gunicorn and celery shut their own children down
        deadline = time.monotonic() + 15
        for process in processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(0)))
    try:
        while True:
            for name, process in processes.items():
                if process.poll() is not None:
                    print(f"{name} exited with status {process.returncode}; stopping the others.")
                    stop()
                    return 1
            time.sleep(1)
    except KeyboardInterrupt:
        print("\nStopping…")
        stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
