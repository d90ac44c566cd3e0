"""The worker's pool and database connections, read as a process reads them: Django
and the Celery app set up in a subprocess with a controlled environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
django.setup()
from django.conf import settings
from config.celery import app
db = settings.DATABASES["default"]
print(json.dumps({"pool": app.conf.worker_pool, "concurrency": app.conf.worker_concurrency,
                  "db_pool": db["OPTIONS"].get("pool"), "conn_max_age": db["CONN_MAX_AGE"],
                  "routes": settings.CELERY_TASK_ROUTES}))
"""

RELEASE = """
import json, django
django.setup()
from django.db import connection
from config.db import release_connection
def pid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]
first = pid()
release_connection()
released = connection.connection is None
second = pid()
print(json.dumps({"released": released, "same_backend": first == second}))
"""


def _env(tmp_path: Path, variables: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HERALD_", "CELERY_", "DATABASE_URL"))
    }
    env.update(
        {"DJANGO_SETTINGS_MODULE": "config.settings", "HERALD_DATA_DIR": str(tmp_path), **variables}
    )
    return env


def settings_of_each(tmp_path: Path, code: str, *variants: dict[str, str]) -> list[dict[str, Any]]:
    """What ``code`` prints in a fresh process per environment ``variants`` (started together:
    each one sets Django up from scratch, and they do not depend on each other)."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=_env(tmp_path, variables),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for variables in variants
    ]
    results = []
    for process in processes:
        try:
            stdout, stderr = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, stderr
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    return results


def settings_of(tmp_path: Path, code: str, **variables: str) -> dict[str, Any]:
    return settings_of_each(tmp_path, code, variables)[0]


def test_the_worker_runs_threads_and_concurrency_is_the_number_of_sends(tmp_path: Path) -> None:
    default, five, prefork = settings_of_each(
        tmp_path,
        PROBE,
        {},
        {"HERALD_WORKER_CONCURRENCY": "5"},
        {"HERALD_WORKER_POOL": "prefork"},
    )
    assert (default["pool"], default["concurrency"]) == ("threads", 16)
    assert five["concurrency"] == 5
    assert prefork["pool"] == "prefork"
    # The ticks never wait behind a backlog of sends: their own queue.
    routes = default["routes"]
    for task in ("publishing.delivery_dispatch", "publishing.housekeeping", "reposts.engine_tick"):
        assert routes[task] == {"queue": "herald.dispatch"}


def test_a_database_pool_bounds_postgresql_connections(tmp_path: Path) -> None:
    url = "postgres://herald@127.0.0.1:5432/herald"  # not connected to: settings only
    pooled, unpooled, sqlite = settings_of_each(
        tmp_path,
        PROBE,
        {"DATABASE_URL": url, "HERALD_DB_POOL_SIZE": "6"},
        {"DATABASE_URL": url},
        {"HERALD_DB_POOL_SIZE": "6"},  # SQLite: no pool
    )
    assert pooled["db_pool"] == {"min_size": 1, "max_size": 6, "timeout": 30}
    assert pooled["conn_max_age"] == 0  # Django: a pool replaces persistent connections
    assert unpooled["db_pool"] is None
    assert sqlite["db_pool"] is None


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="PostgreSQL run only"
)
def test_release_connection_gives_a_pooled_connection_back(tmp_path: Path) -> None:
    """A send releases its connection before the provider call; the next query takes one from
    the pool again (here the same backend: a pool of one)."""
    result = settings_of(
        tmp_path, RELEASE, DATABASE_URL=os.environ["DATABASE_URL"], HERALD_DB_POOL_SIZE="1"
    )
    assert result == {"released": True, "same_backend": True}
