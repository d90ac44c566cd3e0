"""What both benchmarks share: their PostgreSQL databases, CPU readings from ``/proc``, the
description of the machine, and the results file."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent


# --- Django in the benchmark's own process --------------------------------------------------


LOCAL_ENVIRONMENT = {
    "DJANGO_SETTINGS_MODULE": "config.settings",
    "HERALD_ENVIRONMENT": "local",
    "HERALD_DEBUG": "false",
    "HERALD_LOG_LEVEL": "WARNING",
    "HERALD_API_RATE": "1000000/min",  # throttling runs, never answers 429
    "HERALD_PUBLIC_URL": "http://127.0.0.1",
}


def configure_django(
    database_url: str, *, secret_key: str, redis_url: str | None = None, **extra: str
) -> None:
    """Set up Django in this process on ``database_url`` with the local environment's settings
    (none of the caller's ``HERALD_``/``AWS_`` variables; throttling on, never 429), on Redis only
    with ``redis_url`` (else the in-process cache), plus ``extra`` variables."""
    for key in [k for k in os.environ if k.startswith(("HERALD_", "AWS_"))]:
        del os.environ[key]
    os.environ.update(LOCAL_ENVIRONMENT, DATABASE_URL=database_url, SECRET_KEY=secret_key, **extra)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()


# --- Databases -----------------------------------------------------------------------------


def database_name(database_url: str) -> str:
    """The database of ``database_url``; only databases named ``herald_bench*`` are managed."""
    name = urlsplit(database_url).path.lstrip("/")
    if not name.startswith("herald_bench"):
        raise SystemExit(
            f"refusing to manage database {name!r}: its name must start with herald_bench"
        )
    return name


def _admin_url(database_url: str) -> str:
    return urlsplit(database_url)._replace(path="/postgres").geturl()


def ensure_database(database_url: str, *, fresh: bool) -> None:
    """Create the database; with ``fresh``, drop it first."""
    import psycopg
    from psycopg import sql

    name = database_name(database_url)
    with psycopg.connect(_admin_url(database_url), autocommit=True, connect_timeout=5) as conn:
        if fresh:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_database(database_url: str) -> None:
    """Drop the database if it exists; errors (e.g. PostgreSQL already gone) are ignored."""
    import psycopg
    from psycopg import sql

    name = database_name(database_url)
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(_admin_url(database_url), autocommit=True, connect_timeout=5) as conn,
    ):
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


# --- CPU from /proc (Linux; 0.0 or nothing elsewhere) ----------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_cpu_seconds(stat: str) -> float:
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def child_pids(pid: int) -> list[int]:
    """The direct children of a process (gunicorn's workers)."""
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            children.extend(int(child) for child in (task / "children").read_text().split())
    return children


def process_tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its direct children (gunicorn's or Celery's workers)."""
    total = 0.0
    for each in [pid, *child_pids(pid)]:
        with contextlib.suppress(OSError):
            total += _stat_cpu_seconds(Path(f"/proc/{each}/stat").read_text())
    return total


def connection_owners(parent_pid: int, server_port: int) -> dict[int, int]:
    """Client port -> pid of the child of ``parent_pid`` (a gunicorn worker) holding the server
    end of an established IPv4 loopback connection to ``server_port`` (from /proc/net/tcp and
    each worker's file descriptors)."""
    owner_of_inode: dict[int, int] = {}
    for pid in child_pids(parent_pid):
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        owner_of_inode[int(target[8:-1])] = pid
    owners: dict[int, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        remote_port = int(fields[2].rsplit(":", 1)[1], 16)
        owner = owner_of_inode.get(int(fields[9]))
        if local_port == server_port and fields[3] == "01" and owner is not None:  # ESTABLISHED
            owners[remote_port] = owner
    return owners


def process_tree_context_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of every thread of a process and its direct
    children. Voluntary: a thread blocked (socket I/O, or waiting for the GIL); involuntary: the
    scheduler preempted it for another runnable task."""
    voluntary = involuntary = 0
    for each in [pid, *child_pids(pid)]:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{each}/task").iterdir():
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        voluntary += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        involuntary += int(line.split()[1])
    return voluntary, involuntary


def database_backends_cpu(database: str) -> dict[int, float]:
    """CPU seconds of each PostgreSQL backend serving ``database`` (on this machine), by pid.

    A backend that exits between two readings takes its CPU with it: the difference of two
    readings is a lower bound."""
    found: dict[int, float] = {}
    needle = f" {database} ".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle not in (proc / "cmdline").read_bytes().replace(b"\0", b" ") + b" ":
                continue
            found[int(proc.name)] = _stat_cpu_seconds((proc / "stat").read_text())
        except OSError:
            continue
    return found


def backends_cpu_since(database: str, before: dict[int, float]) -> float:
    """CPU seconds the backends of ``database`` used since the ``before`` reading."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in database_backends_cpu(database).items())


# --- Figures and report --------------------------------------------------------------------


def seconds_after(due: datetime | None, at: datetime) -> float:
    """Seconds from a measured row's due time to ``at`` (every measured row is scheduled, so
    its due time is set)."""
    assert due is not None, "a measured destination has its due time"
    return (at - due).total_seconds()


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def loadavg() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def git_revision() -> str:
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout.strip()


def write_results(payload: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
